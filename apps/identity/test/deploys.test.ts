import assert from "node:assert/strict";
import { mkdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { isSchemaBehind, openDatabase } from "@agentpass/db";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { type Kysely, sql } from "kysely";
import pino from "pino";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import { openIdentityService } from "../src/service.ts";
import { identityMigrations } from "../src/store/migrations.ts";
import { openTestIdentity } from "./support/harness.ts";
import { runAdminCli } from "./support/run-cli.ts";

/** A migration of a release after this one: it only adds, as every migration must. */
const NEXT_RELEASE = {
  "0099_next_release": {
    async up(db: Kysely<unknown>) {
      await sql`ALTER TABLE accounts ADD COLUMN display_name text`.execute(db);
      await sql`CREATE TABLE next_release_things (id text PRIMARY KEY)`.execute(db);
    },
  },
};

function envOf(database: TestDatabase, extra: Record<string, string> = {}) {
  return { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "", ...extra };
}

function openRaw(database: TestDatabase) {
  return openDatabase({
    databaseUrl: database.databaseUrl,
    dataDir: database.dataDir,
    fileName: "identity.sqlite",
  });
}

async function tableNames(database: TestDatabase): Promise<string[]> {
  const raw = openRaw(database);
  try {
    return (await raw.db.introspection.getTables()).map((table) => table.name).sort();
  } finally {
    await raw.close();
  }
}

/** The identity service on `database`, its warnings kept as parsed log lines. */
async function startIdentity(database: TestDatabase, env: Record<string, string> = {}) {
  const loaded = loadConfig({ ...envOf(database, env), LOG_LEVEL: "warn" });
  if (!loaded.ok) throw new Error(loaded.error);
  const warnings: { msg: string; migrations?: string[] }[] = [];
  const logger = pino(
    { level: "warn" },
    { write: (line: string) => warnings.push(JSON.parse(line)) },
  );
  const service = await openIdentityService(loaded.config, { logger });
  return { service, warnings };
}

for (const engine of testEngines()) {
  describe(`deploys: the schema apart from start-up (${engine})`, () => {
    it("starts beside a database a newer release migrated, says so once, and serves", async () => {
      const database = await createTestDatabase(engine);
      const raw = openRaw(database);
      try {
        await raw.migrate("identity", { ...identityMigrations(engine), ...NEXT_RELEASE });
      } finally {
        await raw.close();
      }
      const first = await startIdentity(database);
      const second = await startIdentity(database, { MIGRATE_ON_START: "false" });
      try {
        for (const { warnings } of [first, second]) {
          assert.deepEqual(
            warnings.map((line) => line.migrations),
            [["0099_next_release"]],
          );
        }
        const { ctx } = first.service;
        const account = await createAccount(ctx, "rolling@example.com");
        assert.ok(account.ok);
        const userKey = await issueKey(ctx, "user", account.account.id, "laptop");
        const partner = await createPartner(ctx, { ownerAccountId: account.account.id, name: "N" });
        assert.ok(userKey.ok && partner.ok);
        const partnerKey = await issueKey(ctx, "partner", partner.partner.id, "server");
        assert.ok(partnerKey.ok);
        const minted = await second.service.request("/api/session-tokens", {
          method: "POST",
          headers: { authorization: `Bearer ${userKey.key}` },
        });
        assert.equal(minted.status, 201);
        const { sessionToken } = (await minted.json()) as { sessionToken: string };
        const verified = await first.service.request("/api/verify", {
          method: "POST",
          headers: { authorization: `Bearer ${partnerKey.key}` },
          body: JSON.stringify({ sessionToken }),
        });
        assert.deepEqual(await verified.json(), { email: "rolling@example.com" });

        const cli = await runAdminCli(["accounts", "create", "cli@example.com"], envOf(database));
        assert.equal(cli.code, 0, cli.stderr);
        const migrate = await runAdminCli(["migrate"], envOf(database));
        assert.equal(migrate.code, 0, migrate.stderr);
        assert.equal(
          migrate.stdout,
          "The database schema is up to date\nApplied by a newer release, left as they are: 0099_next_release\n",
        );
      } finally {
        await second.service.close();
        await first.service.close();
        await database.drop();
      }
    });

    it("admin commands refuse a database that lacks migrations, change nothing, and name the command that migrates", async () => {
      const database = await createTestDatabase(engine);
      try {
        const refused = await runAdminCli(["accounts", "create", "a@example.com"], envOf(database));
        assert.equal(refused.code, 1);
        assert.match(
          refused.stderr,
          /^agentpass-server: The database schema is behind this release \(missing migrations 0001_core, .*\): run `agentpass-server migrate` first\n$/,
        );
        assert.deepEqual(await tableNames(database), []);

        const migrated = await runAdminCli(["migrate"], envOf(database));
        assert.equal(migrated.code, 0, migrated.stderr);
        assert.equal(
          migrated.stdout,
          `Applied ${Object.keys(identityMigrations(engine)).sort().join(", ")}\n`,
        );
        const created = await runAdminCli(["accounts", "create", "a@example.com"], envOf(database));
        assert.equal(created.code, 0, created.stderr);
        const again = await runAdminCli(["migrate"], envOf(database));
        assert.equal(again.stdout, "The database schema is up to date\n");
      } finally {
        await database.drop();
      }
    });

    it("with MIGRATE_ON_START=false, refuses to start on a database that lacks a migration; by default, applies it", async () => {
      const database = await createTestDatabase(engine);
      const all = identityMigrations(engine);
      const last = Object.keys(all).sort().at(-1) as string;
      const raw = openRaw(database);
      try {
        await raw.migrate(
          "identity",
          Object.fromEntries(Object.entries(all).filter(([name]) => name !== last)),
        );
      } finally {
        await raw.close();
      }
      try {
        await assert.rejects(startIdentity(database, { MIGRATE_ON_START: "false" }), (error) => {
          assert.ok(isSchemaBehind(error));
          assert.equal(
            error.message,
            `The database schema is behind this release (missing migration ${last}): run \`agentpass-server migrate\` first`,
          );
          return true;
        });
        const started = await startIdentity(database);
        await started.service.close();
        assert.deepEqual(started.warnings, []);
      } finally {
        await database.drop();
      }
    });
  });
}

describe("database settings", () => {
  it("refuses a pool size, pool mode or MIGRATE_ON_START it cannot use, naming the variable", () => {
    for (const [variable, value, error] of [
      ["DATABASE_POOL_SIZE", "0", "must be a whole number of connections from 1 to 1000"],
      ["DATABASE_POOL_SIZE", "ten", "must be a whole number of connections from 1 to 1000"],
      ["DATABASE_POOL_SIZE", "2.5", "must be a whole number of connections from 1 to 1000"],
      ["DATABASE_POOL_MODE", "statement", 'must be "session" or "transaction"'],
      ["MIGRATE_ON_START", "no", 'must be "true" or "false"'],
    ] as const) {
      assert.deepEqual(loadConfig({ [variable]: value }), {
        ok: false,
        error: `Invalid ${variable}: ${error}`,
      });
    }
    const loaded = loadConfig({ DATABASE_POOL_SIZE: "40", DATABASE_POOL_MODE: "transaction" });
    assert.ok(loaded.ok);
    assert.deepEqual(loaded.config.databasePool, { size: 40, mode: "transaction" });
    assert.equal(loaded.config.migrateOnStart, true);
  });
});

for (const engine of testEngines()) {
  describe(`partners provision: a deploy's job that gives a partner's service its key (${engine})`, () => {
    it("makes the owner, the partner and a key once, keeps a working key, and replaces a revoked one", async () => {
      const identity = await openTestIdentity(engine);
      const keyFile = join(identity.database.dataDir, "keys", "notes-partner-key");
      mkdirSync(dirname(keyFile), { recursive: true });
      const provision = () =>
        runAdminCli(
          [
            "partners",
            "provision",
            "--name",
            "AgentPass notes",
            "--owner",
            "notes@agentpass.local",
            "--key-file",
            keyFile,
          ],
          identity.env,
        );
      /** What AgentPass says of the key in the file: a token refusal means it took the key. */
      const judge = async () => {
        const key = readFileSync(keyFile, "utf8").trim();
        const answer = await identity.verify(
          `Bearer ${key}`,
          JSON.stringify({ sessionToken: "aps_whatever" }),
        );
        return { key, code: ((await answer.json()) as { code: string }).code };
      };
      try {
        const first = await provision();
        assert.equal(first.code, 0, first.stderr);
        assert.match(first.stdout, /^wrote a new key to /);
        assert.equal(statSync(keyFile).mode & 0o777, 0o600, "only its owner reads the key");
        const made = await judge();
        assert.equal(made.code, "session_token_invalid");

        const again = await provision();
        assert.equal(again.code, 0, again.stderr);
        assert.match(again.stdout, /^kept the key in /);
        assert.equal((await judge()).key, made.key, "a working key is kept");

        const [partner] = await identity.ctx.store.listPartnersOwnedBy(
          (await identity.ctx.store.findAccountByEmail("notes@agentpass.local"))?.id ?? "",
        );
        assert.ok(partner);
        for (const key of await identity.ctx.store.listKeys("partner_keys", partner.id)) {
          await identity.ctx.store.revokeKey("partner_keys", key.id, identity.now());
        }
        const replaced = await provision();
        assert.equal(replaced.code, 0, replaced.stderr);
        assert.match(replaced.stdout, /^wrote a new key to /);
        const fresh = await judge();
        assert.notEqual(fresh.key, made.key);
        assert.equal(fresh.code, "session_token_invalid", "the new key works");
        const partners = await identity.ctx.store.listPartnersOwnedBy(partner.ownerAccountId);
        assert.equal(partners.length, 1, "one partner, however often it runs");
      } finally {
        await identity.close();
      }
    });
  });
}
