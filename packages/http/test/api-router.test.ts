import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, it } from "node:test";
import { z } from "zod";
import {
  COMMON_ERRORS,
  createApiListener,
  defineEndpoint,
  defineErrors,
  HttpError,
  type RunningServer,
  startServer,
} from "../src/index.ts";
import { buildOpenApiDocument } from "../src/openapi.ts";
import { captureLog } from "./support/captured-log.ts";

const ERRORS = defineErrors({
  thing_not_found: { status: 404, message: "Thing not found" },
  invalid_count: { status: 400, message: "Invalid count" },
  invalid_mode: { status: 400, message: "Invalid mode" },
  invalid_json: { status: 400, message: "Body must be JSON" },
  invalid_body: { status: 400, message: "Invalid body" },
  key_missing: { status: 401, message: "Send x-key" },
});

const ThingId = z.object({ id: z.string() });

/**
 * `POST /api/checked/{count}?mode=`: every part of its input documented by a schema, its key
 * checked first; `handled` counts the calls of its handler.
 */
function checkedEndpoint(handled: { calls: number }) {
  return defineEndpoint({
    method: "POST",
    path: "/api/checked/{count}",
    maxBodyBytes: 1000,
    operation: { operationId: "check", responses: {} },
    admit: (request) =>
      request.header("x-key") === "k"
        ? { ok: true, admitted: "k" }
        : { ok: false, answer: new HttpError(ERRORS.key_missing) },
    input: {
      params: z.object({ count: z.coerce.number().int().min(1) }),
      query: z.object({ mode: z.enum(["fast", "slow"]).default("fast") }),
      body: z.object({ name: z.string().min(1) }),
    },
    refuseInput(failure) {
      if (failure.part === "params") return new HttpError(ERRORS.invalid_count);
      if (failure.part === "query") return new HttpError(ERRORS.invalid_mode);
      if (failure.problem === "not_json") return new HttpError(ERRORS.invalid_json);
      return new HttpError(ERRORS.invalid_body);
    },
    handle(_request, { admitted, params, query, body }) {
      handled.calls++;
      return { status: 200, body: { key: admitted, count: params.count, ...query, ...body } };
    },
  });
}

/** A service of a few endpoints, logging into `lines`. */
function testService(handled = { calls: 0 }) {
  const { logger, lines } = captureLog();
  const operation = { responses: {} };
  const listener = createApiListener(
    [
      defineEndpoint({
        method: "GET",
        path: "/api/public",
        public: true,
        operation,
        handle: () => ({ status: 200, body: { open: true } }),
      }),
      defineEndpoint({
        method: "POST",
        path: "/api/secret",
        operation,
        input: { body: z.looseObject({}) },
        refuseInput: () => new HttpError(ERRORS.invalid_body),
        handle: (_request, { body }) => ({ status: 200, body: { got: body } }),
      }),
      defineEndpoint({
        method: "GET",
        path: "/api/things/{id}",
        operation,
        input: { params: ThingId, query: z.object({ q: z.string().optional() }) },
        refuseInput: () => new HttpError(ERRORS.thing_not_found),
        handle: (_request, { params, query }) =>
          params.id === "known"
            ? { status: 200, body: { id: params.id, q: query.q } }
            : new HttpError(ERRORS.thing_not_found),
      }),
      defineEndpoint({
        method: "POST",
        path: "/api/things/{id}",
        operation,
        input: { params: ThingId },
        refuseInput: () => new HttpError(ERRORS.thing_not_found),
        // A body JSON cannot hold.
        handle: async () => ({ status: 200, body: { count: 1n } }),
      }),
      checkedEndpoint(handled),
      defineEndpoint({
        method: "DELETE",
        path: "/api/things/{id}",
        operation,
        input: { params: ThingId },
        refuseInput: () => new HttpError(ERRORS.thing_not_found),
        handle: () => {
          throw new Error("a fault with a secret in it");
        },
      }),
    ],
    { logger, maxBodyBytes: 100, trustProxy: "none" },
  );
  return { lines, service: { listener, close: async () => {} } };
}

describe("the API router", () => {
  let server: RunningServer;
  let lines: Record<string, unknown>[];
  const handled = { calls: 0 };

  before(async () => {
    const made = testService(handled);
    lines = made.lines;
    server = await startServer(made.service, { port: 0, host: "127.0.0.1" });
  });
  after(() => server.close());

  const call = (path: string, init?: RequestInit) => fetch(`${server.url}${path}`, init);

  it("routes exact and templated paths, decodes parameters, and answers JSON with nosniff and a request id", async () => {
    const found = await call("/api/things/known?q=a%20b&token=secret");
    assert.equal(found.status, 200);
    assert.deepEqual(await found.json(), { id: "known", q: "a b" });
    assert.equal(found.headers.get("content-type"), "application/json");
    assert.equal(found.headers.get("x-content-type-options"), "nosniff");
    assert.match(found.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
    const missing = await call("/api/things/other");
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "Thing not found", code: "thing_not_found" });
    // A percent-encoded unreserved character names the same path.
    assert.equal((await call("/api/%70ublic")).status, 200);
    assert.equal((await call("/api/things/%E0%A4%A")).status, 404, "a malformed escape");
  });

  it("logs one line per request, naming its route and not its path or query, under the answer's request id", async () => {
    const answer = await call("/api/things/known?token=secret");
    await answer.text();
    const line = lines.findLast((entry) => entry.msg === "request");
    assert.ok(line);
    assert.equal(line.requestId, answer.headers.get("x-request-id"));
    assert.deepEqual([line.method, line.route, line.status], ["GET", "/api/things/{id}", 200]);
    assert.equal(typeof line.ms, "number");
    assert.ok(!JSON.stringify(lines).includes("secret"), "the query was logged");
    assert.ok(!JSON.stringify(lines).includes("known"), "the path's own values were logged");
  });

  it("answers a known path asked with another method 405 with Allow, and HEAD like GET without a body", async () => {
    const wrong = await call("/api/things/known", { method: "PUT" });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get("allow"), "DELETE, GET, HEAD, OPTIONS, POST");
    assert.deepEqual(await wrong.json(), {
      error: COMMON_ERRORS.method_not_allowed.message,
      code: "method_not_allowed",
    });
    const head = await call("/api/public", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    assert.equal((await call("/nowhere")).status, 404);
  });

  it("lets any origin read public endpoints, and no origin the others; preflights need no credential", async () => {
    const origin = { origin: "https://elsewhere.example" };
    const open = await call("/api/public", { headers: origin });
    assert.equal(open.headers.get("access-control-allow-origin"), "*");
    const openPreflight = await call("/api/public", {
      method: "OPTIONS",
      headers: { ...origin, "access-control-request-method": "GET" },
    });
    assert.equal(openPreflight.status, 204);
    assert.equal(openPreflight.headers.get("access-control-allow-origin"), "*");
    const secret = await call("/api/secret", { method: "POST", headers: origin, body: "{}" });
    assert.equal(secret.status, 200);
    assert.equal(secret.headers.get("access-control-allow-origin"), null);
    const closedPreflight = await call("/api/secret", {
      method: "OPTIONS",
      headers: { ...origin, "access-control-request-method": "POST" },
    });
    assert.equal(closedPreflight.status, 204);
    assert.equal(closedPreflight.headers.get("access-control-allow-origin"), null);
  });

  it("answers a fault 500 with a request id and nothing of the error, and a body over the limit 413", async () => {
    const fault = await call("/api/things/known", { method: "DELETE" });
    assert.equal(fault.status, 500);
    const body = (await fault.json()) as Record<string, string>;
    assert.deepEqual(Object.keys(body).sort(), ["code", "error", "requestId"]);
    assert.equal(fault.headers.get("x-request-id"), body.requestId);
    const logged = lines.find((entry) => entry.msg === "request failed");
    assert.equal(logged?.requestId, body.requestId);
    const unwritable = await call("/api/things/known", { method: "POST" });
    assert.equal(
      unwritable.status,
      500,
      "an answer that cannot be written is a fault, not a crash",
    );
    const large = await call("/api/secret", { method: "POST", body: "x".repeat(101) });
    assert.equal(large.status, 413);
    assert.deepEqual(await large.json(), {
      error: "Request body too large",
      code: "body_too_large",
    });
  });

  it("answers headers over Node's limit with a JSON 431", async () => {
    const answer = await new Promise<{ status: number; type: string; body: string }>(
      (resolve, reject) => {
        const request = httpRequest(`${server.url}/api/public`, {
          headers: { "x-filler": "a".repeat(20_000) },
        });
        request.on("response", (response) => {
          let body = "";
          response.on("data", (chunk) => {
            body += chunk;
          });
          response.on("end", () =>
            resolve({
              status: response.statusCode ?? 0,
              type: String(response.headers["content-type"]),
              body,
            }),
          );
        });
        request.on("error", reject);
        request.end();
      },
    );
    assert.equal(answer.status, 431);
    assert.equal(answer.type, "application/json");
    assert.deepEqual(JSON.parse(answer.body), {
      error: "Request headers too large",
      code: "headers_too_large",
    });
  });

  describe("parses each endpoint's input by the schemas it documents, before its handler", () => {
    const checked = (path: string, body: string, headers: Record<string, string> = {}) =>
      call(path, { method: "POST", headers: { "x-key": "k", ...headers }, body });

    it("hands the handler the parsed values, without the fields its schemas do not name", async () => {
      const answer = await checked("/api/checked/3?mode=slow&admin=1", '{"name":"a","admin":true}');
      assert.equal(answer.status, 200);
      assert.deepEqual(await answer.json(), { key: "k", count: 3, mode: "slow", name: "a" });
      const defaulted = await checked("/api/checked/3", '{"name":"a"}');
      assert.deepEqual(await defaulted.json(), { key: "k", count: 3, mode: "fast", name: "a" });
    });

    it("answers input its schemas refuse with the endpoint's own refusal; the handler never runs", async () => {
      const before = handled.calls;
      const refusals: [string, string, string][] = [
        ["/api/checked/zero", '{"name":"a"}', "Invalid count"],
        ["/api/checked/3?mode=warp", '{"name":"a"}', "Invalid mode"],
        ["/api/checked/3", "{not json", "Body must be JSON"],
        ["/api/checked/3", "", "Body must be JSON"],
        ["/api/checked/3", '{"name":""}', "Invalid body"],
        ["/api/checked/3", '{"name":5}', "Invalid body"],
        ["/api/checked/3", `${"[".repeat(65)}${"]".repeat(65)}`, "Invalid body"],
      ];
      for (const [path, body, error] of refusals) {
        const answer = await checked(path, body);
        assert.equal(answer.status, 400, `${path} ${body}`);
        assert.equal(((await answer.json()) as { error: string }).error, error, `${path} ${body}`);
      }
      assert.equal(handled.calls, before);
    });

    it("admits the request before it reads any input", async () => {
      const answer = await call("/api/checked/zero?mode=warp", { method: "POST", body: "{" });
      assert.equal(answer.status, 401);
      assert.equal(((await answer.json()) as { error: string }).error, "Send x-key");
    });

    it("documents the same schemas in the OpenAPI document", () => {
      const document = buildOpenApiDocument([checkedEndpoint({ calls: 0 })], {
        info: { title: "test", version: "1" },
      }) as { paths: Record<string, { post: Record<string, unknown> }> };
      const operation = document.paths["/api/checked/{count}"]?.post as {
        parameters: { name: string; in: string }[];
        requestBody: { required: boolean; content: Record<string, { schema: unknown }> };
      };
      assert.deepEqual(
        operation.parameters.map((parameter) => `${parameter.in} ${parameter.name}`),
        ["path count", "query mode"],
      );
      assert.equal(operation.requestBody.required, true);
      const body = operation.requestBody.content["application/json"]?.schema as {
        required: string[];
      };
      assert.deepEqual(body.required, ["name"]);
    });

    it("refuses to serve an endpoint whose path parameters or input refusal are not declared", () => {
      const { logger } = captureLog();
      const options = { logger, maxBodyBytes: 100, trustProxy: "none" as const };
      const operation = { responses: {} };
      const handle = () => ({ status: 204 });
      assert.throws(
        () =>
          createApiListener(
            [defineEndpoint({ method: "GET", path: "/x/{id}", operation, handle })],
            options,
          ),
        /GET \/x\/\{id\} has path parameters but no input.params schema/,
      );
      const input = { body: z.object({}) };
      assert.throws(
        () =>
          createApiListener(
            [defineEndpoint({ method: "POST", path: "/x", operation, input, handle })],
            options,
          ),
        /POST \/x takes input but has no refuseInput/,
      );
    });
  });
});
