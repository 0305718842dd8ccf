import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { loadConfig } from "../../apps/identity/src/config.ts";
import { createAccount } from "../../apps/identity/src/domain/accounts.ts";
import { issueKey, revokeKey } from "../../apps/identity/src/domain/credentials.ts";
import { createPartner } from "../../apps/identity/src/domain/partners.ts";
import { type IdentityService, openIdentityService } from "../../apps/identity/src/service.ts";
import { loadNotesConfig } from "../../apps/notes/src/config.ts";
import { type NotesService, openNotesService } from "../../apps/notes/src/service.ts";
import { captureLog, type LogLine } from "../../packages/http/test/support/captured-log.ts";
import {
  parsePrometheusText,
  type Sample,
  sampleValue,
} from "../../packages/http/test/support/prometheus-text.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";

function unwrap<T>(result: { ok: true; config: T } | { ok: false; error: string }): T {
  if (!result.ok) throw new Error(result.error);
  return result.config;
}

for (const engine of testEngines()) {
  describe(`one request id through the notes API and the identity service (${engine})`, () => {
    const identityLog = captureLog();
    const notesLog = captureLog();
    const identityLines = identityLog.lines;
    const notesLines = notesLog.lines;
    const databases: TestDatabase[] = [];
    let identity: IdentityService;
    let server: RunningServer;
    let notes: NotesService;
    let userKey: string;
    let partnerKeyId: string;

    before(async () => {
      const identityDb = await createTestDatabase(engine);
      const notesDb = await createTestDatabase(engine);
      databases.push(identityDb, notesDb);
      identity = await openIdentityService(
        unwrap(
          loadConfig({
            DATA_DIR: identityDb.dataDir,
            DATABASE_URL: identityDb.databaseUrl,
            LOG_LEVEL: "info",
          }),
        ),
        { logger: identityLog.logger },
      );
      server = await startServer(identity, { port: 0, host: "127.0.0.1" });
      const { ctx } = identity;
      const owner = await createAccount(ctx, "notes-operator@example.com");
      const person = await createAccount(ctx, "ada@example.com");
      if (!owner.ok || !person.ok) throw new Error("accounts");
      const partner = await createPartner(ctx, { ownerAccountId: owner.account.id, name: "Notes" });
      if (!partner.ok) throw new Error(partner.reason);
      const partnerKey = await issueKey(ctx, "partner", partner.partner.id, "server");
      const user = await issueKey(ctx, "user", person.account.id, "laptop");
      if (!partnerKey.ok || !user.ok) throw new Error("keys");
      userKey = user.key;
      partnerKeyId = partnerKey.record.id;
      notes = await openNotesService(
        unwrap(
          loadNotesConfig({
            DATA_DIR: notesDb.dataDir,
            DATABASE_URL: notesDb.databaseUrl,
            AGENTPASS_URL: server.url,
            AGENTPASS_PARTNER_KEY: partnerKey.key,
            LOG_LEVEL: "info",
          }),
        ),
        { logger: notesLog.logger },
      );
      await notes.ctx.store.addUser("ada@example.com", Date.now());
    });
    after(async () => {
      await notes?.close();
      await server?.close();
      await Promise.all(databases.map((database) => database.drop()));
    });

    /** A fresh session token (the notes API caches a verified one for 5 s). */
    async function mint(): Promise<string> {
      const response = await fetch(`${server.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      });
      return ((await response.json()) as { sessionToken: string }).sessionToken;
    }

    const listNotes = (token: string, headers: Record<string, string> = {}) =>
      notes.request("/api/notes", { headers: { "x-session-token": token, ...headers } });

    const accessLine = (lines: LogLine[], route: string, requestId: string) =>
      lines.filter(
        (line) => line.msg === "request" && line.route === route && line.requestId === requestId,
      );

    async function scrapeNotes(): Promise<Sample[]> {
      const response = await notes.request("/metrics");
      assert.equal(response.status, 200);
      return parsePrometheusText(await response.text());
    }

    it("keeps and echoes an inbound X-Request-Id, on both services' access-log lines, with the trace id", async () => {
      const requestId = `edge-${crypto.randomUUID()}`;
      const response = await listNotes(await mint(), {
        "x-request-id": requestId,
        traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01`,
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("x-request-id"), requestId);
      const [notesLine] = accessLine(notesLines, "/api/notes", requestId);
      const [identityLine] = accessLine(identityLines, "/api/verify", requestId);
      assert.equal(notesLine?.traceId, TRACE_ID);
      assert.equal(identityLine?.traceId, TRACE_ID, "the notes API passed the trace on");
      assert.equal(identityLine?.status, 200);
    });

    it("follows a later traceparent version, and passes the trace's tracestate on", async () => {
      const requestId = `edge-${crypto.randomUUID()}`;
      const response = await listNotes(await mint(), {
        "x-request-id": requestId,
        traceparent: `01-${TRACE_ID}-b7ad6b7169203331-01-a-later-field`,
        tracestate: "vendor=opaque",
      });
      assert.equal(response.status, 200);
      const [notesLine] = accessLine(notesLines, "/api/notes", requestId);
      const [identityLine] = accessLine(identityLines, "/api/verify", requestId);
      assert.equal(notesLine?.traceId, TRACE_ID);
      assert.equal(identityLine?.traceId, TRACE_ID);
    });

    for (const [label, given] of [
      ["a malformed", "two words;"],
      ["an oversized", "x".repeat(129)],
    ] as const) {
      it(`replaces ${label} X-Request-Id, and passes its own on to the identity service`, async () => {
        const response = await listNotes(await mint(), { "x-request-id": given });
        assert.equal(response.status, 200);
        const requestId = response.headers.get("x-request-id") ?? "";
        assert.match(requestId, UUID);
        assert.equal(accessLine(notesLines, "/api/notes", requestId).length, 1);
        assert.equal(accessLine(identityLines, "/api/verify", requestId).length, 1);
      });
    }

    it("/metrics parses as Prometheus text and its verify counter moves with verifies", async () => {
      const before = await scrapeNotes();
      const token = await mint();
      assert.equal((await listNotes(token)).status, 200);
      assert.equal((await listNotes(token)).status, 200);
      assert.equal((await listNotes("aps_forged")).status, 401);
      assert.equal((await notes.request("/api/notes")).status, 401);
      const after = await scrapeNotes();
      const moved = (code: string) => {
        const labels = { kind: "verify", code };
        const name = "agentpass_notes_authentications_total";
        return sampleValue(after, name, labels) - sampleValue(before, name, labels);
      };
      assert.equal(moved("ok"), 2);
      assert.equal(moved("session_token_invalid"), 1);
      assert.equal(moved("session_token_missing"), 1);
    });

    it("counts a 503 of the notes API by its reason: the partner key refused", async () => {
      const before = await scrapeNotes();
      const token = await mint();
      await revokeKey(identity.ctx, "partner", partnerKeyId);
      assert.equal((await listNotes(token)).status, 503);
      const after = await scrapeNotes();
      const moved = (name: string, labels: Record<string, string>) =>
        sampleValue(after, name, labels) - sampleValue(before, name, labels);
      assert.equal(
        moved("agentpass_notes_identity_failures_total", { reason: "partner_key_refused" }),
        1,
      );
      assert.equal(moved("agentpass_http_unavailable_total", { code: "identity_unavailable" }), 1);
    });
  });
}
