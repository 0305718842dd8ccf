import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { z } from "zod";
import {
  type ApiOptions,
  createApiListener,
  createLoopbackClient,
  createServiceMetrics,
  defineEndpoint,
  defineErrors,
  HttpError,
  parseTrustProxy,
  type TrustProxy,
} from "../src/index.ts";
import { captureLog } from "./support/captured-log.ts";
import { parsePrometheusText, sampleValue } from "./support/prometheus-text.ts";

const ERRORS = defineErrors({ thing_not_found: { status: 404, message: "Thing not found" } });
const TOKEN = "a-metrics-token-of-some-length";
const clients: { close(): Promise<void> }[] = [];
after(() => Promise.all(clients.map((client) => client.close())));

/** A service of two endpoints with metrics, logging into `lines`. */
function testService(options: Partial<ApiOptions> & { trustProxy?: TrustProxy } = {}) {
  const { logger, lines } = captureLog();
  const metrics = options.metrics ?? createServiceMetrics();
  const listener = createApiListener(
    [
      defineEndpoint({
        method: "GET",
        path: "/api/things/{id}",
        operation: { responses: {} },
        input: { params: z.object({ id: z.string() }) },
        refuseInput: () => new HttpError(ERRORS.thing_not_found),
        handle: (request, { params }) =>
          params.id === "known"
            ? { status: 200, body: { id: params.id, requestId: request.requestId } }
            : new HttpError(ERRORS.thing_not_found),
      }),
      defineEndpoint({
        method: "POST",
        path: "/api/check",
        outcome: "check",
        operation: { responses: {} },
        input: { body: z.unknown() },
        refuseInput: () => new HttpError(ERRORS.thing_not_found),
        handle: (_request, { body }) =>
          body === "good"
            ? { status: 200, body: { ok: true } }
            : new HttpError(ERRORS.thing_not_found),
      }),
    ],
    { logger, maxBodyBytes: 1024, trustProxy: "none", ...options, metrics },
  );
  const client = createLoopbackClient(listener);
  clients.push(client);
  return { request: client.request, lines, metrics };
}

async function scrape(request: ReturnType<typeof testService>["request"], init?: RequestInit) {
  const response = await request("/metrics", init);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await response.text());
}

function trustOne(): TrustProxy {
  const trust = parseTrustProxy("1");
  if (typeof trust === "object" && "error" in trust) throw new Error(trust.error);
  return trust;
}

describe("GET /metrics", () => {
  it("answers Prometheus text that counts every request by method, route template and code", async () => {
    const { request } = testService();
    await request("/api/things/known");
    await request("/api/things/known?q=secret");
    await request("/api/things/other");
    await request("/nothing/here");
    const samples = await scrape(request);
    const count = (route: string, code: string) =>
      sampleValue(samples, "agentpass_http_requests_total", { method: "GET", route, code });
    assert.equal(count("/api/things/{id}", "200"), 2);
    assert.equal(count("/api/things/{id}", "404"), 1);
    assert.equal(count("(unknown)", "404"), 1);
    // promhttp's `code`, and for one release the former `status` beside it, equal.
    const requests = samples.filter((sample) => sample.name === "agentpass_http_requests_total");
    assert.equal(requests.length, 3);
    for (const { labels } of requests) assert.equal(labels.status, labels.code);
    assert.equal(
      sampleValue(samples, "agentpass_http_request_duration_seconds_count", {
        method: "GET",
        route: "/api/things/{id}",
      }),
      3,
    );
    assert.ok(
      samples.every(
        (sample) => !Object.values(sample.labels).some((v) => /\/known|secret/.test(v)),
      ),
      "no label holds a path's own value or a query",
    );
  });

  it("counts the answers of an endpoint that names an outcome by their code", async () => {
    const { request } = testService();
    const check = (body: string) => request("/api/check", { method: "POST", body });
    await check('"good"');
    await check('"good"');
    await check('"bad"');
    const samples = await scrape(request);
    const outcome = (code: string) =>
      sampleValue(samples, "agentpass_outcomes_total", { operation: "check", code });
    assert.equal(outcome("ok"), 2);
    assert.equal(outcome("thing_not_found"), 1);
  });

  it("answers 404, as a path nothing serves, to a client a trusted proxy names from elsewhere", async () => {
    const { request } = testService({ trustProxy: trustOne() });
    const forwarded = await request("/metrics", {
      headers: { "x-forwarded-for": "203.0.113.7" },
    });
    const unknown = await request("/nothing/here", {
      headers: { "x-forwarded-for": "203.0.113.7" },
    });
    assert.equal(forwarded.status, 404);
    assert.deepEqual(await forwarded.json(), await unknown.json());
    const posted = await request("/metrics", {
      method: "POST",
      headers: { "x-forwarded-for": "203.0.113.7" },
    });
    assert.equal(posted.status, 404, "no 405 tells the path exists");
    const local = await request("/metrics", { headers: { "x-forwarded-for": "127.0.0.1" } });
    assert.equal(local.status, 200, "a loopback client through the trusted proxy");
  });

  it("answers 404 to a request a proxy it does not trust forwarded from this machine", async () => {
    const { request } = testService();
    const forwarded = await request("/metrics", { headers: { "x-forwarded-for": "203.0.113.7" } });
    assert.equal(forwarded.status, 404);
    const rfc7239 = await request("/metrics", { headers: { forwarded: "for=127.0.0.1" } });
    assert.equal(rfc7239.status, 404);
  });

  it("with a token, answers only Authorization: Bearer <token>, from anywhere", async () => {
    const { request } = testService({
      trustProxy: trustOne(),
      metrics: createServiceMetrics({ token: TOKEN }),
    });
    assert.equal((await request("/metrics")).status, 404, "loopback without the token");
    const wrong = { authorization: `Bearer ${TOKEN}x` };
    assert.equal((await request("/metrics", { headers: wrong })).status, 404);
    const right = { authorization: `Bearer ${TOKEN}`, "x-forwarded-for": "203.0.113.7" };
    await scrape(request, { headers: right });
    const posted = await request("/metrics", { method: "POST", headers: right });
    assert.equal(posted.status, 405);
    assert.equal(posted.headers.get("allow"), "GET, HEAD");
  });
});

describe("request ids and trace context", () => {
  it("keeps and echoes a valid inbound X-Request-Id, on the answer, the handler and the log line", async () => {
    const { request, lines } = testService();
    const response = await request("/api/things/known", {
      headers: { "x-request-id": "edge-1.a:b_C-9" },
    });
    assert.equal(response.headers.get("x-request-id"), "edge-1.a:b_C-9");
    assert.equal(((await response.json()) as { requestId: string }).requestId, "edge-1.a:b_C-9");
    const logged = lines.filter((line) => line.msg === "request");
    assert.equal(logged.at(-1)?.requestId, "edge-1.a:b_C-9");
  });

  for (const [label, value] of [
    ["with a space", "two words"],
    ["with a quote", 'a"b'],
    ["over 128 characters", "x".repeat(129)],
  ]) {
    it(`replaces an inbound X-Request-Id ${label} with a new UUID`, async () => {
      const { request, lines } = testService();
      const response = await request("/nothing/here", {
        headers: { "x-request-id": value as string },
      });
      const id = response.headers.get("x-request-id") ?? "";
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal(lines.at(-1)?.requestId, id);
    });
  }

  it("logs the trace id of a valid traceparent, and none of a malformed or all-zero one", async () => {
    const { request, lines } = testService();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const send = (traceparent: string) =>
      request("/api/things/known", { headers: { traceparent } });
    await send(`00-${traceId}-00f067aa0ba902b7-01`);
    assert.equal(lines.at(-1)?.traceId, traceId);
    for (const bad of [
      `00-${"0".repeat(32)}-00f067aa0ba902b7-01`,
      `00-${traceId}-${"0".repeat(16)}-01`,
      `00-${traceId.toUpperCase()}-00f067aa0ba902b7-01`,
      `ff-${traceId}-00f067aa0ba902b7-01`,
      `00-${traceId}-00f067aa0ba902b7`,
      `00-${traceId}-00f067aa0ba902b7-01-more`,
    ]) {
      await send(bad);
      assert.equal(lines.at(-1)?.traceId, undefined, bad);
    }
    // A later version is read as far as version 00 goes (W3C Trace Context, section 4.3).
    for (const later of [
      `01-${traceId}-00f067aa0ba902b7-01`,
      `cc-${traceId}-00f067aa0ba902b7-01-x-y`,
    ]) {
      await send(later);
      assert.equal(lines.at(-1)?.traceId, traceId, later);
    }
  });
});
