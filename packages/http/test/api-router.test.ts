import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, it } from "node:test";
import {
  COMMON_ERRORS,
  createApiListener,
  defineEndpoint,
  defineErrors,
  HttpError,
  type RunningServer,
  startServer,
} from "../src/index.ts";
import { captureLog } from "./support/captured-log.ts";

const ERRORS = defineErrors({ thing_not_found: { status: 404, message: "Thing not found" } });

/** A service of four endpoints, logging into `lines`. */
function testService() {
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
        async handle(request) {
          const body = await request.readJson();
          return { status: 200, body: { got: body.ok ? body.value : null } };
        },
      }),
      defineEndpoint({
        method: "GET",
        path: "/api/things/{id}",
        operation,
        handle: (request) =>
          request.params.id === "known"
            ? { status: 200, body: { id: request.params.id, q: request.query.get("q") } }
            : new HttpError(ERRORS.thing_not_found),
      }),
      defineEndpoint({
        method: "POST",
        path: "/api/things/{id}",
        operation,
        // A body JSON cannot hold.
        handle: async () => ({ status: 200, body: { count: 1n } }),
      }),
      defineEndpoint({
        method: "DELETE",
        path: "/api/things/{id}",
        operation,
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

  before(async () => {
    const made = testService();
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
});
