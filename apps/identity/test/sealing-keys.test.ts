import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createReadCaches, migrateToLatest, openDatabase } from "@agentpass/db";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import {
  deriveKeyEncryptionKey,
  generateSealingKey,
  type SealingKey,
  sealSessionToken,
  toSealingKey,
  wrapSealingKey,
} from "../src/infra/sealed-tokens.ts";
import { type IdentityService, openIdentityService } from "../src/service.ts";
import { identityMigrations } from "../src/store/migrations.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { START } from "./support/harness.ts";
import { type CliResult, runAdminCli } from "./support/run-cli.ts";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));
const TTL_MS = 300_000;
const REFUSED =
  /Sealing keys in the database were wrapped under another secret: set AGENTPASS_SECRET \(or restore .*identity\.secret\) to the secret they were made with/;

type Env = Record<string, string>;

async function openService(env: Env, clock: () => number = () => START) {
  const loaded = loadConfig({ LOG_LEVEL: "silent", ...env });
  if (!loaded.ok) throw new Error(loaded.error);
  return openIdentityService(loaded.config, { clock });
}

/** An account with a user key, and a partner with a partner key, made on `service`. */
async function seed(service: IdentityService) {
  const created = await createAccount(service.ctx, `${crypto.randomUUID()}@example.com`);
  assert.ok(created.ok);
  const userKey = await issueKey(service.ctx, "user", created.account.id, "laptop");
  assert.ok(userKey.ok);
  const partner = await createPartner(service.ctx, {
    ownerAccountId: created.account.id,
    name: "Notes",
  });
  assert.ok(partner.ok);
  const partnerKey = await issueKey(service.ctx, "partner", partner.partner.id, "server");
  assert.ok(partnerKey.ok);
  return {
    accountId: created.account.id,
    userKeyId: userKey.record.id,
    userKey: userKey.key,
    partnerKey: partnerKey.key,
  };
}
type Seeded = Awaited<ReturnType<typeof seed>>;

async function mint(service: IdentityService, seeded: Seeded): Promise<string> {
  const response = await service.request("/api/session-tokens", {
    method: "POST",
    headers: { authorization: `Bearer ${seeded.userKey}` },
  });
  assert.equal(response.status, 201);
  return ((await response.json()) as { sessionToken: string }).sessionToken;
}

function verify(service: IdentityService, seeded: Seeded, sessionToken: string) {
  return service.request("/api/verify", {
    method: "POST",
    headers: { authorization: `Bearer ${seeded.partnerKey}` },
    body: JSON.stringify({ sessionToken }),
  });
}

async function assertRefused(response: Response) {
  assert.equal(response.status, 401);
  assert.deepEqual(await response.json(), {
    error: "Invalid or expired session token",
    code: "session_token_invalid",
  });
}

/** A token for `seeded`'s user key sealed directly with `key`, as whoever holds the key could. */
function forge(key: SealingKey, seeded: Seeded, issuedAt: number, expiresAt: number): string {
  return sealSessionToken(key, {
    userKeyId: seeded.userKeyId,
    accountId: seeded.accountId,
    issuedAt,
    expiresAt,
    audience: null,
  });
}

/** The id of the key that sealed `token`: bytes 1..5 after the prefix. */
function keyIdOf(token: string): string {
  return Buffer.from(token.slice("aps_".length), "base64url").toString("hex", 1, 5);
}

async function rowsIn(env: Env) {
  const database = openDatabase<IdentityDatabase>({
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR as string,
    fileName: "identity.sqlite",
  });
  try {
    return await database.db.selectFrom("sealing_keys").selectAll().orderBy("id").execute();
  } finally {
    await database.close();
  }
}

function freshDir(): string {
  return mkdtempSync(join(tmpdir(), "agentpass-sealing-"));
}

/**
 * What a copy of the database is on each engine: the SQLite file (and its WAL) in a fresh
 * DATA_DIR; for PostgreSQL, the same database seen from a fresh DATA_DIR.
 */
function copyOfDatabase(env: Env): Env {
  const dataDir = freshDir();
  if (env.DATABASE_URL) return { DATA_DIR: dataDir, DATABASE_URL: env.DATABASE_URL };
  for (const file of ["identity.sqlite", "identity.sqlite-wal"]) {
    const from = join(env.DATA_DIR as string, file);
    if (existsSync(from)) copyFileSync(from, join(dataDir, file));
  }
  return { DATA_DIR: dataDir };
}

/** The admin CLI in its own process, with `input` on its stdin. */
function runCliWithInput(args: string[], env: Env, input: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env.PATH, LOG_LEVEL: "silent", ...env } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

const newSecret = () => randomBytes(32).toString("base64url");

for (const engine of testEngines()) {
  describe(`sealing keys (${engine})`, () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    /** A service on a database of its own, closed (and the database dropped) after the suite. */
    async function start(env: Env = {}) {
      const database = await createTestDatabase(engine);
      cleanups.push(() => database.drop());
      const base = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const service = await openService({ ...base, ...env });
      cleanups.push(() => service.close());
      return { service, env: { ...base, ...env }, seeded: await seed(service) };
    }
    async function also(env: Env, clock?: () => number) {
      const service = await openService(env, clock);
      cleanups.push(() => service.close());
      return service;
    }

    it("makes one key when 3 instances start at once on an empty database, 10 rounds out of 10", async () => {
      for (let round = 0; round < 10; round++) {
        const database = await createTestDatabase(engine);
        try {
          const env = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
          if (engine === "sqlite") {
            // Migrations are not what is tested here, and node:sqlite cannot run them from 3
            // connections of one thread at once: the sealing key is the first thing they share.
            const opened = openDatabase({ dataDir: database.dataDir, fileName: "identity.sqlite" });
            await migrateToLatest(opened.db, "identity", identityMigrations("sqlite"));
            await opened.close();
          }
          const services = await Promise.all([1, 2, 3].map(() => openService(env)));
          try {
            assert.equal((await rowsIn(env)).length, 1, `round ${round}: one key`);
            const seeded = await seed(services[0] as IdentityService);
            for (const minter of services) {
              const token = await mint(minter, seeded);
              for (const verifier of services) {
                assert.equal((await verify(verifier, seeded, token)).status, 200, `round ${round}`);
              }
            }
          } finally {
            // One by one: on SQLite, closings flushing at once from one thread would wait on
            // each other's transactions (the busy timeout blocks the thread that must commit).
            for (const service of services) await service.close();
          }
        } finally {
          await database.drop();
        }
      }
    });

    it("keeps no key in clear: the row holds only the key wrapped, and DATA_DIR/identity.secret is 0600", async () => {
      const { service, env } = await start();
      const [row, ...others] = await rowsIn(env);
      assert.equal(others.length, 0);
      assert.ok(row);
      const key = service.ctx.sealingKeys.current;
      assert.equal(row.id, key.id);
      assert.equal(row.secret, null);
      assert.match(row.wrapped ?? "", /^v1\.[A-Za-z0-9_-]{80}$/);
      const stored = JSON.stringify(row);
      for (const encoding of ["base64", "base64url", "hex"] as const) {
        assert.ok(!stored.includes(key.secret.toString(encoding)), `no ${encoding} of the key`);
      }
      const secretFile = join(env.DATA_DIR, "identity.secret");
      assert.equal(statSync(secretFile).mode & 0o777, 0o600);
      assert.match(readFileSync(secretFile, "utf8"), /^[A-Za-z0-9_-]{43}$/);
      assert.ok(!stored.includes(readFileSync(secretFile, "utf8")));
    });

    it("refuses to start on a copy of the database without its secret, and changes no row", async () => {
      const { env } = await start();
      const before = await rowsIn(env);
      const copy = copyOfDatabase(env);
      await assert.rejects(openService(copy), REFUSED);
      assert.ok(!existsSync(join(copy.DATA_DIR as string, "identity.secret")), "no secret made");
      await assert.rejects(openService({ ...copy, AGENTPASS_SECRET: newSecret() }), REFUSED);
      assert.deepEqual(await rowsIn(copy), before);
      assert.deepEqual(await rowsIn(env), before);
    });

    it("starts on a copy that has the secret too (DATA_DIR/identity.secret restored)", async () => {
      const { service, env, seeded } = await start();
      const token = await mint(service, seeded);
      const copy = copyOfDatabase(env);
      copyFileSync(
        join(env.DATA_DIR, "identity.secret"),
        join(copy.DATA_DIR as string, "identity.secret"),
      );
      const restored = await also(copy);
      assert.equal((await verify(restored, seeded, token)).status, 200);
    });

    it("shares the keys between instances with different DATA_DIRs through AGENTPASS_SECRET", async () => {
      const secret = newSecret();
      const { service, env, seeded } = await start({ AGENTPASS_SECRET: secret });
      const copy = copyOfDatabase(env);
      const other = await also({ ...copy, AGENTPASS_SECRET: secret });
      for (const [from, to] of [
        [service, other],
        [other, service],
      ] as const) {
        assert.equal((await verify(to, seeded, await mint(from, seeded))).status, 200);
      }
      for (const dir of [env.DATA_DIR, copy.DATA_DIR as string]) {
        assert.ok(!existsSync(join(dir, "identity.secret")), "AGENTPASS_SECRET set: no file");
      }
    });

    it("takes up a key rotated by the admin CLI on the next request, on every instance", async () => {
      let now = START;
      const { env } = await start();
      const [first, second] = [await also(env, () => now), await also(env, () => now)];
      const seeded = await seed(first);
      const oldKey = first.ctx.sealingKeys.current;
      const oldToken = await mint(first, seeded);
      assert.equal(keyIdOf(oldToken), oldKey.id);

      const rotated = await runAdminCli(["sealing-keys", "rotate"], env);
      assert.equal(rotated.code, 0, rotated.stderr);
      const newId = rotated.stdout.trim();
      assert.match(newId, /^[0-9a-f]{8}$/);
      assert.notEqual(newId, oldKey.id);

      const newToken = await mint(first, seeded);
      assert.equal(keyIdOf(newToken), newId, "the running instance seals with the new key");
      assert.equal(keyIdOf(await mint(second, seeded)), newId);
      for (const service of [first, second]) {
        assert.equal((await verify(service, seeded, oldToken)).status, 200, "old tokens open");
        assert.equal((await verify(service, seeded, newToken)).status, 200);
      }

      const listed = await runAdminCli(["sealing-keys", "list", "--json"], env);
      assert.equal(listed.code, 0, listed.stderr);
      const keys = JSON.parse(listed.stdout);
      assert.deepEqual(
        keys.map((key: { id: string; sealing: boolean }) => [key.id, key.sealing]),
        [
          [newId, true],
          [oldKey.id, false],
        ],
      );
      assert.equal(keys[1].retiredAt, keys[0].createdAt);
      assert.ok(!listed.stdout.includes(oldKey.secret.toString("base64")));

      // Whoever holds the retired key cannot forge a token issued after its retirement.
      const retiredAt = Date.parse(keys[1].retiredAt);
      now = retiredAt + 120_000;
      const late = retiredAt + 90_000;
      const forged = forge(oldKey, seeded, late, late + TTL_MS);
      await assertRefused(await verify(second, seeded, forged));
      const withinSkew = forge(oldKey, seeded, retiredAt + 30_000, retiredAt + 30_000 + TTL_MS);
      assert.equal((await verify(second, seeded, withinSkew)).status, 200);
      const current = second.ctx.sealingKeys.current;
      const byNewKey = forge(current, seeded, late, late + TTL_MS);
      assert.equal((await verify(second, seeded, byNewKey)).status, 200);
    });

    it("skips a key that does not unwrap under its secret, and answers every request", async () => {
      const { service, seeded } = await start();
      const token = await mint(service, seeded);
      const current = service.ctx.sealingKeys.current;
      const [newest] = await service.ctx.store.listSealingKeys();
      const stranger = generateSealingKey();
      const wrapped = wrapSealingKey(deriveKeyEncryptionKey(newSecret()), stranger);
      const added = await service.ctx.store.addSealingKey(
        { id: stranger.id, wrapped, createdAt: START },
        { id: newest?.id ?? "", wrapped: newest?.wrapped ?? "" },
      );
      assert.ok(added);
      assert.equal((await verify(service, seeded, token)).status, 200);
      assert.equal(keyIdOf(await mint(service, seeded)), current.id);
      const strangers = forge(stranger, seeded, START, START + TTL_MS);
      await assertRefused(await verify(service, seeded, strangers));
    });

    it("rewraps every key under a new secret from stdin, kept in DATA_DIR/identity.secret", async () => {
      const { service, env, seeded } = await start();
      const token = await mint(service, seeded);
      const secretFile = join(env.DATA_DIR, "identity.secret");
      const oldSecret = readFileSync(secretFile, "utf8");
      const secret = newSecret();

      const result = await runCliWithInput(["sealing-keys", "rewrap"], env, `${secret}\n`);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^Rewrapped 1 sealing keys\. .*identity\.secret now holds/);
      assert.ok(
        !`${result.stdout}${result.stderr}`.includes(secret),
        "the secret is never printed",
      );
      assert.equal(readFileSync(secretFile, "utf8"), secret);
      assert.equal(statSync(secretFile).mode & 0o777, 0o600);
      assert.deepEqual(
        readdirSync(env.DATA_DIR).filter((name) => name.includes(".secret")),
        ["identity.secret"],
      );

      assert.equal((await verify(service, seeded, token)).status, 200, "the running one goes on");
      const restarted = await also(env);
      assert.equal((await verify(restarted, seeded, token)).status, 200);
      await assert.rejects(openService({ ...env, AGENTPASS_SECRET: oldSecret }), REFUSED);
    });

    it("rewraps under a new AGENTPASS_SECRET: instances start with it and not with the old", async () => {
      const oldSecret = newSecret();
      const { service, env, seeded } = await start({ AGENTPASS_SECRET: oldSecret });
      const token = await mint(service, seeded);
      const secret = newSecret();
      const result = await runCliWithInput(["sealing-keys", "rewrap"], env, secret);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /Set AGENTPASS_SECRET to the new secret on every instance/);
      assert.ok(!existsSync(join(env.DATA_DIR, "identity.secret")));

      const restarted = await also({ ...env, AGENTPASS_SECRET: secret });
      assert.equal((await verify(restarted, seeded, token)).status, 200);
      await assert.rejects(openService(env), REFUSED);
    });

    it("refuses a new secret under 32 characters, and changes nothing", async () => {
      const { env } = await start();
      const before = await rowsIn(env);
      const result = await runCliWithInput(["sealing-keys", "rewrap"], env, "too short\n");
      assert.equal(result.code, 1);
      assert.match(result.stderr, /must be at least 32 characters/);
      assert.deepEqual(await rowsIn(env), before);
    });

    it("wraps a key an older release kept in clear on the first start, and erases it", async () => {
      const database = await createTestDatabase(engine);
      cleanups.push(() => database.drop());
      const env = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const old = openDatabase<IdentityDatabase>({
        databaseUrl: database.databaseUrl,
        dataDir: database.dataDir,
        fileName: "identity.sqlite",
      });
      const released = Object.entries(identityMigrations(engine)).filter(([name]) => name < "0005");
      await migrateToLatest(old.db, "identity", Object.fromEntries(released));
      const clear = randomBytes(32);
      await old.db
        .insertInto("sealing_keys")
        .values({ id: "0badc0de", secret: clear.toString("base64"), created_at: START })
        .execute();
      await old.close();

      const service = await also(env);
      assert.equal(service.ctx.sealingKeys.current.id, "0badc0de");
      const [row] = await rowsIn(env);
      assert.equal(row?.secret, null);
      assert.match(row?.wrapped ?? "", /^v1\./);
      assert.ok(!JSON.stringify(row).includes(clear.toString("base64")));
      const seeded = await seed(service);
      const minted = forge(toSealingKey("0badc0de", clear), seeded, START, START + TTL_MS);
      assert.equal((await verify(service, seeded, minted)).status, 200, "old tokens still open");
    });

    it("answers 401 for a token living longer than the service's lifetime, or issued ahead", async () => {
      const { service, seeded } = await start();
      // Sealed with the service's own key, as whoever leaked it could.
      const key = service.ctx.sealingKeys.current;
      const year = 365 * 86_400_000;
      await assertRefused(await verify(service, seeded, forge(key, seeded, START, START + year)));
      const ahead = START + 120_000;
      await assertRefused(await verify(service, seeded, forge(key, seeded, ahead, ahead + TTL_MS)));
      const longer = forge(key, seeded, START, START + TTL_MS + 1);
      await assertRefused(await verify(service, seeded, longer));

      const exact = forge(key, seeded, START, START + TTL_MS);
      assert.equal((await verify(service, seeded, exact)).status, 200);
      const skewed = START + 60_000;
      const withinSkew = forge(key, seeded, skewed, skewed + TTL_MS);
      assert.equal((await verify(service, seeded, withinSkew)).status, 200);
    });

    it("takes keys from TOKEN_KEYS, stores none, and refuses to rotate or rewrap them", async () => {
      const ids = ["0a0b0c0d", "1a1b1c1d"];
      const tokenKeys = ids.map((id) => `${id}:${randomBytes(32).toString("base64")}`).join(",");
      const { service, env, seeded } = await start({ TOKEN_KEYS: tokenKeys });
      assert.equal(keyIdOf(await mint(service, seeded)), ids[0]);
      assert.deepEqual(await rowsIn(env), []);
      assert.ok(!existsSync(join(env.DATA_DIR, "identity.secret")));

      const listed = await runAdminCli(["sealing-keys", "list", "--json"], env);
      assert.deepEqual(
        JSON.parse(listed.stdout).map((key: { id: string; sealing: boolean }) => key.sealing),
        [true, false],
      );
      for (const [command, input] of [
        ["rotate", ""],
        ["rewrap", newSecret()],
      ] as const) {
        const refused = await runCliWithInput(["sealing-keys", command], env, input);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /Sealing keys come from TOKEN_KEYS/);
      }
      assert.deepEqual(await rowsIn(env), []);
    });
  });
}

describe("TOKEN_KEYS", () => {
  it("is refused at start when two keys share an id", () => {
    const key = () => `0a0b0c0d:${randomBytes(32).toString("base64")}`;
    const loaded = loadConfig({ TOKEN_KEYS: `${key()},${key()}` });
    assert.deepEqual(loaded, {
      ok: false,
      error: "Invalid TOKEN_KEYS: key id 0a0b0c0d appears twice",
    });
  });
});

describe("a change check's onChange (how the keys are re-read)", () => {
  it("runs inside the check that noticed a change, before its callers go on, and again after it failed", async () => {
    let changed = true;
    let failNext = true;
    let runs = 0;
    const caches = createReadCaches(
      () => {
        const answer = changed;
        changed = false;
        return answer;
      },
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        runs++;
        if (failNext) {
          failNext = false;
          throw new Error("database down");
        }
      },
    );
    await assert.rejects(caches.beginRequest(), /database down/);
    assert.equal(runs, 1);
    await caches.beginRequest(); // nothing changed since, but the failed run is owed
    assert.equal(runs, 2);
    await caches.beginRequest();
    assert.equal(runs, 2, "no change, no run");
    changed = true;
    await caches.beginRequest();
    assert.equal(runs, 3);
  });
});
