import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import {
  createPreparedQuery,
  createReadCaches,
  type OpenedDatabase,
  openDatabase,
  shareChecks,
} from "@agentpass/db";
import { testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { issueKey, revokeKey } from "../src/domain/credentials.ts";
import { hashKey } from "../src/domain/keys.ts";
import { openIdentityService } from "../src/service.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { createStore, keyChangeCheck } from "../src/store/store.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** A check the test finishes by hand, counting how many runs started. */
function manualCheck() {
  const runs: PromiseWithResolvers<void>[] = [];
  return {
    runs,
    check: () => {
      const run = Promise.withResolvers<void>();
      runs.push(run);
      return run.promise;
    },
  };
}

/** Which of `promises` have settled, after the microtasks and one event-loop turn ran. */
async function settled(promises: Promise<unknown>[]): Promise<boolean[]> {
  const done = promises.map(() => false);
  for (const [index, promise] of promises.entries()) {
    promise.then(
      () => {
        done[index] = true;
      },
      () => {
        done[index] = true;
      },
    );
  }
  await nextTurn();
  return done;
}

describe("shared change checks", () => {
  it("lets every caller that arrives before a check starts share that one check", async () => {
    const { runs, check } = manualCheck();
    const awaitCheck = shareChecks(check);
    const callers = Array.from({ length: 10 }, () => awaitCheck());
    await nextTurn();
    assert.equal(runs.length, 1);
    runs[0]?.resolve();
    assert.deepEqual(await settled(callers), Array(10).fill(true));
  });

  it("never lets a caller that arrives during a check trust it: it waits for the next one", async () => {
    const { runs, check } = manualCheck();
    const awaitCheck = shareChecks(check);
    const early = awaitCheck();
    await nextTurn();
    assert.equal(runs.length, 1, "the first check has started");
    const late = [awaitCheck(), awaitCheck()];
    runs[0]?.resolve();
    assert.deepEqual(await settled([early, ...late]), [true, false, false]);
    await nextTurn();
    assert.equal(runs.length, 2, "the next check started in the turn after the first ended");
    runs[1]?.resolve();
    assert.deepEqual(await settled(late), [true, true]);
    assert.equal(runs.length, 2, "no check runs without a caller");
  });

  it("starts the next check in a later check phase, so callers of the rest of the turn join it", async () => {
    const { runs, check } = manualCheck();
    const awaitCheck = shareChecks(check);
    const early = awaitCheck();
    await nextTurn();
    const during = awaitCheck(); // arrives while the first check runs
    runs[0]?.resolve();
    await early;
    const afterwards = awaitCheck(); // the same turn, once the first check has ended
    await nextTurn();
    assert.equal(runs.length, 2);
    runs[1]?.resolve();
    assert.deepEqual(await settled([during, afterwards]), [true, true]);
    assert.equal(runs.length, 2, "both shared the second check");
  });

  it("fails the callers of a failed check, and checks afresh for the next caller", async () => {
    const { runs, check } = manualCheck();
    const awaitCheck = shareChecks(check);
    const failed = [awaitCheck(), awaitCheck()];
    await nextTurn();
    runs[0]?.reject(new Error("database unavailable"));
    for (const caller of failed) await assert.rejects(caller, /database unavailable/);
    const again = awaitCheck();
    await nextTurn();
    assert.equal(runs.length, 2);
    runs[1]?.resolve();
    await again;
  });

  it("fails those who joined during a failed check with it, instead of a second wait on the fault", async () => {
    const { runs, check } = manualCheck();
    const awaitCheck = shareChecks(check);
    const first = awaitCheck();
    await nextTurn();
    const joined = awaitCheck(); // arrives while the first check hangs on a stalled database
    runs[0]?.reject(new Error("database unavailable"));
    await assert.rejects(first, /database unavailable/);
    await assert.rejects(joined, /database unavailable/);
    assert.equal(runs.length, 1, "no second check was started for the same fault");
  });
});

const body = (sessionToken: string) => JSON.stringify({ sessionToken });

for (const engine of testEngines()) {
  describe(`key caches on the verify and mint paths (${engine})`, () => {
    let identity: TestIdentity;
    let other: Awaited<ReturnType<typeof openIdentityService>>;

    before(async () => {
      identity = await openTestIdentity(engine);
      const loaded = loadConfig({ ...identity.env, LOG_LEVEL: "silent" });
      if (!loaded.ok) throw new Error(loaded.error);
      // Another instance on the same database, with its own caches.
      other = await openIdentityService(loaded.config, { clock: identity.now });
    });
    after(async () => {
      await other.close();
      await identity.close();
    });

    const verifyOnOther = (partnerKey: string, token: string) =>
      other.request("/api/verify", {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}` },
        body: body(token),
      });
    const mintOnOther = (userKey: string) =>
      other.request("/api/session-tokens", {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      });

    it("sees a revocation made by another instance on its very next request, every time", async () => {
      const partner = await identity.partner();
      for (let round = 0; round < 20; round++) {
        const userKey = await identity.userKey();
        const token = await identity.token(userKey.key);
        // Warm the other instance's caches with both keys, twice.
        for (let warm = 0; warm < 2; warm++) {
          assert.equal((await verifyOnOther(partner.key, token)).status, 200);
          assert.equal((await mintOnOther(userKey.key)).status, 201);
        }
        assert.deepEqual(await revokeKey(identity.ctx, "user", userKey.id), { ok: true });
        const verified = await verifyOnOther(partner.key, token);
        assert.equal(verified.status, 401, `round ${round}: verify after revocation`);
        assert.equal((await mintOnOther(userKey.key)).status, 403, `round ${round}: mint`);
      }
    });

    it("answers 403 for a partner key revoked by another instance on the next request", async () => {
      const partner = await identity.partner();
      const token = await identity.token((await identity.userKey()).key);
      assert.equal((await verifyOnOther(partner.key, token)).status, 200);
      assert.deepEqual(await revokeKey(identity.ctx, "partner", partner.keyId), { ok: true });
      assert.equal((await verifyOnOther(partner.key, token)).status, 403);
    });

    it("stops verifying the tokens of a deleted account on the next request", async () => {
      const partner = await identity.partner();
      const userKey = await identity.userKey();
      const token = await identity.token(userKey.key);
      assert.equal((await verifyOnOther(partner.key, token)).status, 200);
      await identity.ctx.store.deleteAccount(userKey.accountId);
      assert.equal((await verifyOnOther(partner.key, token)).status, 401);
      assert.equal((await mintOnOther(userKey.key)).status, 401);
    });

    it("answers requests that arrive together from one shared check, and all correctly", async () => {
      const partner = await identity.partner();
      const userKey = await identity.userKey();
      const token = await identity.token(userKey.key);
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => verifyOnOther(partner.key, token)),
      );
      assert.deepEqual(
        answers.map((answer) => answer.status),
        Array(50).fill(200),
      );
    });
  });
}

for (const engine of testEngines()) {
  describe(`a cache fill racing a revocation (${engine})`, () => {
    it("never keeps a row read before a revocation once a check has noticed the revocation", async () => {
      const identity = await openTestIdentity(engine);
      // A second connection with its own caches, as another instance has.
      const database = openDatabase<IdentityDatabase>({
        databaseUrl: identity.database.databaseUrl,
        dataDir: identity.database.dataDir,
        fileName: "identity.sqlite",
      });
      try {
        const partner = await identity.partner();
        const query = createPreparedQuery<{ revokedAt: number | null }>(
          database,
          'SELECT revoked_at AS "revokedAt" FROM partner_keys WHERE secret_hash = ?',
        );
        // A read runs at once; a read given a gate holds its answer until the gate opens.
        const caches = createReadCaches(keyChangeCheck(database));
        let gate:
          | { queried: PromiseWithResolvers<void>; open: PromiseWithResolvers<void> }
          | undefined;
        const readKey = caches.cached(async (hash: string) => {
          const held = gate;
          gate = undefined;
          const row = await query(hash);
          held?.queried.resolve();
          await held?.open.promise;
          return row;
        });
        const hash = hashKey(partner.key);
        const otherPartner = await identity.partner();

        const before = await caches.beginRequest();
        const held = {
          queried: Promise.withResolvers<void>(),
          open: Promise.withResolvers<void>(),
        };
        gate = held;
        const early = readKey(before, hash); // a request that arrived before the revocation
        await held.queried.promise;
        assert.deepEqual(await revokeKey(identity.ctx, "partner", partner.keyId), { ok: true });
        const next = await caches.beginRequest(); // the next request's check notices the revocation...
        await readKey(next, hashKey(otherPartner.key)); // ...and its first read starts a fresh cache
        held.open.resolve();
        assert.equal((await early)?.revokedAt, null, "the early request is answered as it arrived");

        const after = await caches.beginRequest();
        assert.notEqual(
          (await readKey(after, hash))?.revokedAt,
          null,
          "the next request sees the revocation",
        );
      } finally {
        await database.close();
        await identity.close();
      }
    });
  });
}

/**
 * `database` as another instance opens it, except that its prepared reads whose SQL contains
 * `match` are counted: how often that instance read them from the database, not its cache.
 */
function countReads(database: OpenedDatabase<IdentityDatabase>, match: string) {
  const counted = { reads: 0, database };
  const { handles } = database;
  if (handles.engine === "postgres") {
    const { pool } = handles;
    const query = (config: { text: string }, values?: unknown[]) => {
      if (config.text.includes(match)) counted.reads++;
      return pool.query(config as never, values);
    };
    const counting = { query } as unknown as typeof pool;
    counted.database = { ...database, handles: { ...handles, pool: counting } };
  } else {
    const { sqlite } = handles;
    const prepare = (text: string) => {
      const statement = sqlite.prepare(text);
      if (!text.includes(match)) return statement;
      return {
        setReturnArrays: (arrays: boolean) => statement.setReturnArrays(arrays),
        columns: () => statement.columns(),
        get: (...params: never[]) => {
          counted.reads++;
          return statement.get(...params);
        },
      };
    };
    const counting = { prepare } as unknown as typeof sqlite;
    counted.database = { ...database, handles: { ...handles, sqlite: counting } };
  }
  return counted;
}

for (const engine of testEngines()) {
  describe(`a key change drops that key's cached reads only (${engine})`, () => {
    let identity: TestIdentity;
    let database: OpenedDatabase<IdentityDatabase>;
    before(async () => {
      identity = await openTestIdentity(engine);
      // Another instance on the same database: its own connections, store and caches.
      database = openDatabase<IdentityDatabase>({
        databaseUrl: identity.database.databaseUrl,
        dataDir: identity.database.dataDir,
        fileName: "identity.sqlite",
      });
    });
    after(async () => {
      await database.close();
      await identity.close();
    });

    /** The other instance, its partner-key reads counted, and one verify's read of `key`. */
    function otherInstance() {
      const counted = countReads(database, "FROM partner_keys WHERE secret_hash");
      const store = createStore(counted.database);
      const readPartnerKey = async (key: string) => {
        const checked = await store.beginHotRead();
        return store.findKeyByHash(checked, "partner_keys", hashKey(key));
      };
      return { counted, readPartnerKey };
    }

    it("keeps a partner key cached through 200 writes of other keys, and sees its revocation by another instance on the next request", async () => {
      const { counted, readPartnerKey } = otherInstance();
      const partner = await identity.partner();
      const account = await identity.account();
      assert.equal((await readPartnerKey(partner.key))?.revokedAt, null);
      assert.equal(counted.reads, 1);
      for (let write = 0; write < 200; write += 2) {
        // Another partner's key and a user key, made and revoked by the first instance.
        const kind = write % 4 === 0 ? "partner" : "user";
        const issued = await issueKey(
          identity.ctx,
          kind,
          kind === "partner" ? partner.id : account.id,
          "other",
        );
        assert.ok(issued.ok);
        assert.equal((await readPartnerKey(partner.key))?.revokedAt, null);
        assert.deepEqual(await revokeKey(identity.ctx, kind, issued.record.id), { ok: true });
        assert.equal((await readPartnerKey(partner.key))?.revokedAt, null);
      }
      assert.equal(counted.reads, 1, "no write of another key dropped the cached partner key");

      assert.deepEqual(await revokeKey(identity.ctx, "partner", partner.keyId), { ok: true });
      assert.notEqual((await readPartnerKey(partner.key))?.revokedAt, null, "the next request");
      assert.equal(counted.reads, 2);
    });

    it("empties its caches when the change log was pruned past what it saw", async () => {
      const { counted, readPartnerKey } = otherInstance();
      const partner = await identity.partner();
      await readPartnerKey(partner.key);
      await readPartnerKey(partner.key);
      assert.equal(counted.reads, 1);
      const { value: seen } = await identity.db
        .selectFrom("key_epoch")
        .select("value")
        .executeTakeFirstOrThrow();
      const account = await identity.account();
      for (let i = 0; i < 3; i++) await issueKey(identity.ctx, "user", account.id, "other");
      // The purge drops changes older than the instance's position: it cannot know what changed.
      await identity.db
        .deleteFrom("key_changes")
        .where("epoch", "<=", seen + 2)
        .execute();
      assert.equal((await readPartnerKey(partner.key))?.revokedAt, null);
      assert.equal(counted.reads, 2, "read again");
    });
  });
}
