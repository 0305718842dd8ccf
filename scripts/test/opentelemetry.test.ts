import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, type TestDatabase } from "@agentpass/db/testing";
import { trace } from "@opentelemetry/api";
import { registerInstrumentations } from "@opentelemetry/instrumentation";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-node";
import { IDENTITY, NOTES, runBin, serveBin } from "./support/bins.ts";

/**
 * OpenTelemetry across the three hops (issue 56): a partner application running the standard
 * Node SDK with the fetch instrumentation calls the notes API, which asks the identity service.
 * Both services run as processes with the standard `OTEL_*` variables, exporting over OTLP/HTTP
 * to a receiver here. One trace holds the partner's span, the notes API's server span
 * (`http.route`), its call to AgentPass, the identity service's server span and its database
 * statements; each hop carries exactly one `traceparent`; the access-log lines carry the ids.
 */

interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const partnerSpans = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(partnerSpans)],
});
provider.register();
registerInstrumentations({ instrumentations: [new UndiciInstrumentation()] });

describe("OpenTelemetry from a partner through the notes API to the identity service", () => {
  const databases: TestDatabase[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  const logs: string[] = [];
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let toNotes: Awaited<ReturnType<typeof recordingProxy>>;
  let toIdentity: Awaited<ReturnType<typeof recordingProxy>>;
  let token: string;

  before(async () => {
    receiver = await otlpReceiver();
    const identityDb = await createTestDatabase("sqlite");
    const notesDb = await createTestDatabase("sqlite");
    databases.push(identityDb, notesDb);
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: "50",
    };
    const identityEnv = { DATA_DIR: identityDb.dataDir, ...otel };
    const admin = (...args: string[]) => runBin(IDENTITY, args, identityEnv, logs);
    await admin("migrate");
    await admin("accounts", "create", "traced@example.com");
    const userKey = await admin("user-keys", "create", "traced@example.com");
    const partnerId = JSON.parse(
      await admin(
        "partners",
        "create",
        "--name",
        "Notes",
        "--owner",
        "traced@example.com",
        "--json",
      ),
    ).id as string;
    const notesKey = await admin("partner-keys", "create", partnerId);
    const identity = serveBin(IDENTITY, identityEnv, logs);
    stops.push(identity.stop);
    const identityUrl = await identity.url;
    toIdentity = await recordingProxy(identityUrl);
    const notesEnv = {
      DATA_DIR: notesDb.dataDir,
      AGENTPASS_URL: toIdentity.url,
      AGENTPASS_PARTNER_KEY: notesKey,
      ...otel,
    };
    await runBin(NOTES, ["migrate"], notesEnv, logs);
    await runBin(NOTES, ["users", "add", "traced@example.com"], notesEnv, logs);
    const notes = serveBin(NOTES, notesEnv, logs);
    stops.push(notes.stop);
    toNotes = await recordingProxy(await notes.url);
    const minted = await fetch(`${identityUrl}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
    });
    token = ((await minted.json()) as { sessionToken: string }).sessionToken;
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop();
    await toNotes?.close();
    await toIdentity?.close();
    await receiver?.close();
    await provider.shutdown();
    for (const database of databases) await database.drop();
  });

  it("makes one trace of every hop, each carried by one traceparent", async () => {
    const traceId = await trace
      .getTracer("partner")
      .startActiveSpan("partner job", async (span) => {
        try {
          const answer = await fetch(`${toNotes.url}/api/notes`, {
            headers: { "x-session-token": token },
          });
          assert.equal(answer.status, 200, await answer.text());
          return span.spanContext().traceId;
        } finally {
          span.end();
        }
      });

    // Each hop carried the trace once (the notes API's own calls at start are traces of theirs).
    for (const [hop, seen, path] of [
      ["partner → notes", toNotes.seen, "/api/notes"],
      ["notes → identity", toIdentity.seen, "/api/verify"],
    ] as const) {
      const calls = seen.filter(
        (call) => call.url === path && String(call.headers.traceparent).includes(traceId),
      );
      assert.equal(calls.length, 1, hop);
      const values = String(calls[0]?.headers.traceparent).split(",");
      assert.equal(values.length, 1, `${hop}: ${values.join(" | ")}`);
      assert.match(values[0] ?? "", new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), hop);
    }

    // The services' spans reach the collector, in the partner's trace.
    const inTrace = await receiver.waitFor(
      (spans) =>
        spans.some((span) => span.service === "agentpass-identity" && span.kind === 2) &&
        spans.some((span) => span.service === "agentpass-notes" && span.kind === 2),
      traceId,
    );
    const notesServer = inTrace.find((s) => s.service === "agentpass-notes" && s.kind === 2);
    const identityServer = inTrace.find((s) => s.service === "agentpass-identity" && s.kind === 2);
    assert.ok(notesServer && identityServer);
    assert.equal(notesServer.name, "GET /api/notes");
    assert.equal(notesServer.attributes["http.route"], "/api/notes");
    assert.equal(notesServer.attributes["http.response.status_code"], 200);
    assert.equal(identityServer.name, "POST /api/verify");
    assert.equal(identityServer.attributes["http.route"], "/api/verify");
    assert.equal(identityServer.attributes["agentpass.outcome"], "ok");
    // The notes API's server span is the child of the partner's fetch.
    const partnerFetch = partnerSpans
      .getFinishedSpans()
      .find((span) => span.spanContext().spanId === notesServer.parentSpanId);
    assert.ok(partnerFetch, "the notes API's span hangs under the partner's fetch");
    // The identity service's span descends from the notes API's, through its call to AgentPass.
    const byId = new Map(inTrace.map((span) => [span.spanId, span]));
    let cursor: ExportedSpan | undefined = identityServer;
    const chain: string[] = [];
    while (cursor && cursor !== notesServer) {
      chain.push(cursor.name);
      cursor = byId.get(cursor.parentSpanId);
    }
    assert.equal(cursor, notesServer, `identity → notes: ${chain.join(" ← ")}`);
    assert.ok(chain.includes("agentpass POST /api/verify"), chain.join(" ← "));
    // The identity service's database statements are spans of its request.
    const statements = inTrace.filter(
      (span) => span.service === "agentpass-identity" && span.attributes["db.system.name"],
    );
    assert.ok(
      statements.some((span) => span.parentSpanId === identityServer.spanId),
      "a statement span under the verification",
    );

    // The access-log lines carry the trace and span ids.
    const lines = logs
      .join("")
      .split("\n")
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => JSON.parse(line) as { traceId?: string; spanId?: string; route?: string });
    const notesLine = lines.find((line) => line.route === "/api/notes");
    assert.equal(notesLine?.traceId, traceId);
    assert.equal(notesLine?.spanId, notesServer.spanId);
  });
});

/** An OTLP/HTTP receiver (JSON, `POST /v1/traces`), its spans flattened with their service. */
async function otlpReceiver() {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.url === "/v1/traces")
      spans.push(...flatten(JSON.parse(Buffer.concat(chunks).toString())));
    response.writeHead(200, { "content-type": "application/json" });
    response.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** The spans of `traceId` once `ready` holds of them (the services export in batches). */
    async waitFor(ready: (spans: ExportedSpan[]) => boolean, traceId: string) {
      // A bound for a failure only (the services export every 50 ms): never a measure of speed.
      for (let tries = 0; tries < 1500; tries++) {
        const inTrace = spans.filter((span) => span.traceId === traceId);
        if (ready(inTrace)) return inTrace;
        await sleep(20);
      }
      throw new Error(`the trace never completed: ${JSON.stringify(spans.map((s) => s.name))}`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

function flatten(body: {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: { key: string; value: OtlpValue }[];
      }[];
    }[];
  }[];
}): ExportedSpan[] {
  const plain = (value: OtlpValue) =>
    value.stringValue ??
    (value.intValue !== undefined
      ? Number(value.intValue)
      : (value.boolValue ?? value.doubleValue));
  return (body.resourceSpans ?? []).flatMap((resource) => {
    const service = String(
      plain(resource.resource?.attributes?.find((a) => a.key === "service.name")?.value ?? {}),
    );
    return (resource.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        service,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? "",
        name: span.name,
        kind: span.kind,
        attributes: Object.fromEntries((span.attributes ?? []).map((a) => [a.key, plain(a.value)])),
      })),
    );
  });
}

/** A loopback proxy that records the headers of each request it passes on to `target`. */
async function recordingProxy(target: string) {
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer(async (request, response) => {
    seen.push({ url: request.url ?? "", headers: request.headers });
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const { host: _host, connection: _connection, ...headers } = request.headers;
    // Passed on untraced (the recording is the point): a plain node:http request.
    const forwarded = await forward(
      `${target}${request.url}`,
      request.method ?? "GET",
      headers,
      Buffer.concat(chunks),
    );
    response.writeHead(forwarded.status, forwarded.headers);
    response.end(forwarded.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One request with node:http, which the fetch instrumentation does not see: headers as given. */
async function forward(url: string, method: string, headers: IncomingHttpHeaders, body: Buffer) {
  const { request } = await import("node:http");
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      const outgoing = request(url, { method, headers }, async (answer) => {
        const chunks: Buffer[] = [];
        for await (const chunk of answer) chunks.push(chunk as Buffer);
        resolve({
          status: answer.statusCode ?? 502,
          headers: answer.headers,
          body: Buffer.concat(chunks),
        });
      });
      outgoing.on("error", reject);
      outgoing.end(method === "GET" || method === "HEAD" ? undefined : body);
    },
  );
}
