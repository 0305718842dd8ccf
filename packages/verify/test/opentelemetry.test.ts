import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { createTestDatabase } from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { context, propagation, trace } from "@opentelemetry/api";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import { createVerifier } from "../src/index.ts";

/**
 * The library in a partner application that runs the standard Node OpenTelemetry SDK with the
 * fetch (undici) instrumentation (issue 56): a verification is a span of the partner's trace, and
 * the call reaches AgentPass with exactly one `traceparent` (the instrumentation's, never a
 * second one set by hand) and the trace's `tracestate`. This file's process registers the SDK;
 * the other files run without it, where the library sends the context it is given.
 */

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
registerInstrumentations({ instrumentations: [new UndiciInstrumentation()] });

describe("@agentpass/verify under a partner's OpenTelemetry", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let identity: TestIdentityService;
  let proxy: { url: string; seen: IncomingHttpHeaders[]; close(): Promise<void> };
  let partnerKey: string;
  let userKey: string;

  before(async () => {
    database = await createTestDatabase("sqlite");
    identity = await startTestIdentityService({ databaseUrl: database.databaseUrl });
    const partner = await identity.createPartner({ name: "Traced", ownerEmail: "o@example.com" });
    partnerKey = (await identity.createPartnerKey(partner.id)).key;
    userKey = (await identity.createUserKey("traced.person@example.com")).key;
    proxy = await recordingProxy(identity.url);
  });
  after(async () => {
    await provider.shutdown();
    await proxy.close();
    await identity.close();
    await database.drop();
  });

  it("is a span of the partner's trace, carried by one traceparent with its tracestate", async () => {
    const token = await mint(identity.url, userKey);
    const verifier = createVerifier({ partnerKey, apiUrl: proxy.url });
    // The partner's request came traced, with a tracestate of its vendor's.
    const incoming = propagation.extract(context.active(), {
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      tracestate: "vendor=opaque",
    });
    const result = await context.with(incoming, () =>
      trace.getTracer("partner").startActiveSpan("GET /api/orders", async (span) => {
        try {
          // A context naming another trace, as a partner wired before OpenTelemetry passes:
          // the SDK's trace wins, and no second header is sent.
          return await verifier.verify(token, {
            traceparent: "00-11111111111111111111111111111111-2222222222222222-01",
          });
        } finally {
          span.end();
        }
      }),
    );
    assert.equal(result.ok, true);

    const [headers] = proxy.seen;
    assert.ok(headers);
    const traceparents = rawValues(headers, "traceparent");
    assert.equal(traceparents.length, 1, `one traceparent: ${traceparents.join(" | ")}`);
    assert.match(traceparents[0] ?? "", /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    assert.deepEqual(rawValues(headers, "tracestate"), ["vendor=opaque"]);

    const spans = exporter.getFinishedSpans();
    const partner = spans.find((span) => span.name === "GET /api/orders");
    const ours = spans.find((span) => span.name === "agentpass POST /api/verify");
    assert.ok(partner && ours, spans.map((span) => span.name).join(", "));
    assert.equal(ours.spanContext().traceId, "0af7651916cd43dd8448eb211c80319c");
    assert.equal(ours.parentSpanContext?.spanId, partner.spanContext().spanId);
    assert.equal(ours.attributes["agentpass.outcome"], "ok");
    assert.equal(ours.attributes["http.response.status_code"], 200);
    // The fetch instrumentation's client span is ours' child: its id is the one sent.
    const client = spans.find(
      (span) => span.parentSpanContext?.spanId === ours.spanContext().spanId,
    );
    assert.ok(client, "the fetch's client span");
    assert.ok(traceparents[0]?.includes(client.spanContext().spanId));
  });

  it("names a refusal's code on its span", async () => {
    exporter.reset();
    const verifier = createVerifier({ partnerKey, apiUrl: proxy.url });
    const result = await verifier.verify("aps_not-a-token");
    assert.equal(result.ok, false);
    const ours = exporter.getFinishedSpans().find((span) => span.name.startsWith("agentpass "));
    assert.equal(ours?.attributes["agentpass.outcome"], "session_token_invalid");
  });
});

async function mint(apiUrl: string, userKey: string): Promise<string> {
  const minted = await fetch(`${apiUrl}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}` },
  });
  return ((await minted.json()) as { sessionToken: string }).sessionToken;
}

/** Every value a header had on the wire, repeated or not. */
function rawValues(headers: IncomingHttpHeaders, name: string): string[] {
  const value = headers[name];
  return value === undefined ? [] : Array.isArray(value) ? value : value.split(/,(?=\s*00-)/);
}

/** A loopback proxy in front of AgentPass that records the headers of each request it passes. */
async function recordingProxy(target: string) {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer(async (request, response) => {
    seen.push(request.headers);
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const forwarded = await fetch(`${target}${request.url}`, {
      method: request.method ?? "POST",
      headers: {
        authorization: request.headers.authorization ?? "",
        "content-type": request.headers["content-type"] ?? "application/json",
      },
      body: Buffer.concat(chunks),
    });
    response.writeHead(forwarded.status, Object.fromEntries(forwarded.headers));
    response.end(Buffer.from(await forwarded.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
