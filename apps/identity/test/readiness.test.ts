import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import { type IdentityService, openIdentityService } from "../src/service.ts";
import { runAdminCli } from "./support/run-cli.ts";

type Env = Record<string, string>;
const newSecret = () => randomBytes(32).toString("base64url");

async function openService(env: Env, options: { announce?: boolean } = {}) {
  const loaded = loadConfig({ LOG_LEVEL: "silent", ...env });
  if (!loaded.ok) throw new Error(loaded.error);
  return openIdentityService(loaded.config, options);
}

/** A user key and a partner key, made on `service`. */
async function seed(service: IdentityService) {
  const created = await createAccount(service.ctx, `${crypto.randomUUID()}@example.com`);
  assert.ok(created.ok);
  const userKey = await issueKey(service.ctx, "user", created.account.id, "laptop");
  const partner = await createPartner(service.ctx, {
    ownerAccountId: created.account.id,
    name: "Notes",
  });
  assert.ok(userKey.ok && partner.ok);
  const partnerKey = await issueKey(service.ctx, "partner", partner.partner.id, "server");
  assert.ok(partnerKey.ok);
  return { userKey: userKey.key, partnerKey: partnerKey.key };
}

for (const engine of testEngines()) {
  describe(`GET /readyz of the identity service (${engine})`, () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    async function open(env: Env, options: { announce?: boolean } = {}) {
      const service = await openService(env, options);
      cleanups.push(() => service.close());
      return service;
    }

    it("answers 503 sealing_key_unwrap_failed on an instance left under the old secret once a rewrap and a rotate went on without it", async () => {
      const database = await createTestDatabase(engine);
      cleanups.push(() => database.drop());
      const base = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const oldSecret = newSecret();
      const stale = await open({ ...base, AGENTPASS_SECRET: oldSecret });
      const keys = await seed(stale);
      assert.equal((await stale.request("/readyz")).status, 200);

      // The bad order: rewrap to a new secret, restart one instance only, rotate from it.
      const admin = await open({ ...base, AGENTPASS_SECRET: oldSecret });
      const newer = newSecret();
      assert.ok((await admin.ctx.sealingKeys.rewrap(newer)).ok);
      const restarted = await open({ ...base, AGENTPASS_SECRET: newer });
      assert.ok((await restarted.ctx.sealingKeys.rotate()).ok);

      const ready = await stale.request("/readyz");
      assert.equal(ready.status, 503);
      assert.equal(ready.headers.get("retry-after"), "5");
      assert.deepEqual(await ready.json(), {
        ok: false,
        database: true,
        reason: "sealing_key_unwrap_failed",
      });
      // What it would do in the pool: refuse the tokens the restarted instance seals.
      const minted = await restarted.request("/api/session-tokens", {
        method: "POST",
        headers: { authorization: `Bearer ${keys.userKey}` },
      });
      const { sessionToken } = (await minted.json()) as { sessionToken: string };
      const verified = await stale.request("/api/verify", {
        method: "POST",
        headers: { authorization: `Bearer ${keys.partnerKey}` },
        body: JSON.stringify({ sessionToken }),
      });
      assert.equal(verified.status, 401);

      assert.equal((await restarted.request("/readyz")).status, 200);
      const again = await open({ ...base, AGENTPASS_SECRET: newer });
      assert.equal((await again.request("/readyz")).status, 200, "restarted with the new secret");
    });

    it("refuses `sealing-keys rotate` while a serving instance runs under another secret", async () => {
      const database = await createTestDatabase(engine);
      cleanups.push(() => database.drop());
      const base = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const oldSecret = newSecret();
      const serving = await openService(
        { ...base, AGENTPASS_SECRET: oldSecret },
        { announce: true },
      );
      let servingClosed = false;
      cleanups.push(async () => servingClosed || (await serving.close()));
      const admin = await open({ ...base, AGENTPASS_SECRET: oldSecret });
      const newer = newSecret();
      assert.ok((await admin.ctx.sealingKeys.rewrap(newer)).ok);

      const rotate = () =>
        runAdminCli(["sealing-keys", "rotate"], { ...base, AGENTPASS_SECRET: newer });
      const refused = await rotate();
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(
        refused.stderr,
        /1 running instance\(s\) use another secret than this command .*restart every instance/,
      );
      assert.equal((await serving.request("/readyz")).status, 200, "nothing was rotated");

      // Restarted under the new secret: the old instance leaves, the new one announces itself.
      await serving.close();
      servingClosed = true;
      const restarted = await open({ ...base, AGENTPASS_SECRET: newer }, { announce: true });
      const rotated = await rotate();
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.equal((await restarted.request("/readyz")).status, 200);
    });
  });
}

describe("SHUTDOWN_DRAIN_MS", () => {
  it("defaults to 5000 in production, 0 in development, and takes the value given", () => {
    const production = loadConfig({
      PUBLIC_URL: "https://id.example.com",
      SMTP_URL: "smtp://mail.example.com:587",
      AGENTPASS_SECRET: newSecret(),
      DATABASE_URL: "postgres://db.example.com/agentpass",
    });
    assert.ok(production.ok, production.ok ? "" : production.error);
    assert.equal(production.config.shutdownDrainMs, 5000);
    const development = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "agentpass-drain-")) });
    assert.ok(development.ok);
    assert.equal(development.config.shutdownDrainMs, 0);
    const given = loadConfig({
      DATABASE_URL: "postgres://x/y",
      AGENTPASS_SECRET: newSecret(),
      SHUTDOWN_DRAIN_MS: "1500",
    });
    assert.ok(given.ok);
    assert.equal(given.config.shutdownDrainMs, 1500);
    assert.equal(loadConfig({ SHUTDOWN_DRAIN_MS: "-1" }).ok, false);
  });
});
