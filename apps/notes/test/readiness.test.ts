import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import type { Verifier } from "@agentpass/verify";
import pino from "pino";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

for (const engine of testEngines()) {
  describe(`GET /readyz of the notes API (${engine})`, () => {
    let notes: TestNotes;
    before(async () => {
      notes = await openTestNotes(engine);
    });
    after(() => notes.close());

    it("answers 503 partner_key_revoked once AgentPass refuses its partner key, as every authenticated call does", async () => {
      const person = await notes.person();
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      assert.equal((await notes.call(null, "GET", "/readyz")).status, 200);

      await notes.identity.revokePartnerKey(notes.partner.keyId);
      const other = await notes.person();
      assert.equal((await other.call("GET", "/api/notes")).status, 503);
      const ready = await notes.call(null, "GET", "/readyz");
      assert.equal(ready.status, 503);
      assert.equal(ready.headers.get("retry-after"), "5");
      assert.deepEqual(await ready.json(), {
        ok: false,
        database: true,
        reason: "partner_key_revoked",
      });
      assert.equal((await notes.call(null, "GET", "/healthz")).status, 200, "it is alive");

      // Another instance started with that key knows it from its first /readyz, before any call.
      const loaded = loadNotesConfig({
        DATA_DIR: notes.database.dataDir,
        DATABASE_URL: notes.database.databaseUrl ?? "",
        AGENTPASS_URL: notes.identity.url,
        AGENTPASS_PARTNER_KEY: notes.partner.key,
      });
      assert.ok(loaded.ok);
      const started = await openNotesService(loaded.config, {
        clock: notes.now,
        logger: pino({ level: "silent" }),
      });
      try {
        const first = await started.request("/readyz");
        assert.equal(first.status, 503);
        assert.equal(((await first.json()) as { reason: string }).reason, "partner_key_revoked");
      } finally {
        await started.close();
      }
    });
  });
}

describe("GET /readyz of the notes API, as its partner key is refused and accepted again", () => {
  /** A verifier whose answers the test sets: AgentPass refusing our key, then accepting it. */
  let answer: Awaited<ReturnType<Verifier["verify"]>>;
  const verifier: Verifier = { verify: async () => answer };
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const refused = {
    ok: false,
    error: "Partner key revoked",
    status: 403,
    code: "partner_key_revoked",
  } as const;

  async function open(env: Record<string, string> = {}) {
    const dataDir = mkdtempSync(join(tmpdir(), "agentpass-readiness-"));
    dirs.push(dataDir);
    const loaded = loadNotesConfig({ DATA_DIR: dataDir, ...env });
    if (!loaded.ok) throw new Error(loaded.error);
    return openNotesService(loaded.config, {
      logger: pino({ level: "silent" }),
      ...(env.AGENTPASS_PARTNER_KEY === undefined ? {} : { verifier }),
    });
  }
  const call = (service: Awaited<ReturnType<typeof open>>, path: string) =>
    service.request(path, { headers: { "x-session-token": "aps_whatever" } });

  it("is ready again on the first answer that shows the key accepted", async () => {
    const service = await open({ AGENTPASS_PARTNER_KEY: `apk_${"c".repeat(38)}` });
    try {
      answer = refused;
      assert.equal((await call(service, "/api/notes")).status, 503);
      assert.equal((await call(service, "/readyz")).status, 503);
      answer = {
        ok: false,
        error: "Invalid or expired session token",
        status: 401,
        code: "session_token_invalid",
      };
      assert.equal((await call(service, "/api/notes")).status, 401);
      assert.equal((await call(service, "/readyz")).status, 200);
      answer = refused;
      await call(service, "/api/notes");
      answer = { ok: false, error: "AgentPass unreachable", status: 0, code: "network_error" };
      await call(service, "/api/notes");
      assert.equal(
        (await call(service, "/readyz")).status,
        503,
        "no answer says nothing of the key",
      );
      // A malformed token is refused before the key is looked at (or without asking at all).
      answer = {
        ok: false,
        error: "Missing or invalid sessionToken",
        status: 400,
        code: "session_token_field_invalid",
      };
      await call(service, "/api/notes");
      assert.equal((await call(service, "/readyz")).status, 503, "a 400 says nothing of the key");
    } finally {
      await service.close();
    }
  });

  it("is not ready from the start without AGENTPASS_PARTNER_KEY", async () => {
    const service = await open();
    try {
      const ready = await call(service, "/readyz");
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), {
        ok: false,
        database: true,
        reason: "partner_key_missing",
      });
    } finally {
      await service.close();
    }
  });
});

describe("SHUTDOWN_DRAIN_MS of the notes API", () => {
  it("defaults to 5000 in production and 0 in development", () => {
    const env = { DATABASE_URL: "postgres://db.example.com/notes" };
    const production = loadNotesConfig({ ...env, PUBLIC_URL: "https://notes.example.com" });
    assert.ok(production.ok, production.ok ? "" : production.error);
    assert.equal(production.config.shutdownDrainMs, 5000);
    const development = loadNotesConfig(env);
    assert.ok(development.ok);
    assert.equal(development.config.shutdownDrainMs, 0);
  });
});
