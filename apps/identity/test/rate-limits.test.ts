import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type Engine, testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { sql } from "kysely";
import { loadConfig } from "../src/config.ts";
import {
  createDatabaseRateLimitStore,
  createMemoryRateLimitStore,
  createRedisRateLimitStore,
  type RateLimitStore,
} from "../src/infra/rate-limit.ts";
import { openIdentityService } from "../src/service.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const LIMITS = { MINTS_PER_MINUTE: "3", FAILED_VERIFIES_PER_MINUTE: "4", BAD_KEYS_PER_MINUTE: "2" };
const BAD_TOKEN = JSON.stringify({ sessionToken: "aps_not-a-token" });

function limitHeaders(engine: Engine, response: Response) {
  return {
    limit: response.headers.get("ratelimit-limit"),
    remaining: response.headers.get("ratelimit-remaining"),
    reset: secondsLeft(engine, response.headers.get("ratelimit-reset")),
    retryAfter: secondsLeft(engine, response.headers.get("retry-after")),
  };
}

/**
 * RateLimit-Reset or Retry-After as far as a test can know it. The memory store (SQLite) windows
 * by the service's clock, which the test holds at a minute's start: exactly "60". PostgreSQL
 * windows by its own clock, which the test cannot hold: some whole seconds up to 60, "≤60".
 */
function secondsLeft(engine: Engine, header: string | null) {
  if (engine === "sqlite" || header === null) return header;
  const seconds = Number(header);
  return Number.isInteger(seconds) && seconds >= 1 && seconds <= 60 ? "≤60" : header;
}

/**
 * A shared store windows by its own clock: wait, if need be, until its current minute has 10 s
 * left, so that a test's hits cannot straddle two windows.
 */
async function awaitFreshMinute(store: RateLimitStore) {
  const { resetMs } = await store.hit(`window-probe:${randomUUID()}`, 60_000);
  if (resetMs < 10_000) await sleep(resetMs + 10);
  await store.close();
}

/** A second instance of the same service: same database, same clock, its own memory. */
async function secondInstance(identity: TestIdentity, env: Record<string, string>) {
  const loaded = loadConfig({ ...identity.env, LOG_LEVEL: "silent", ...env });
  if (!loaded.ok) throw new Error(loaded.error);
  return openIdentityService(loaded.config, { clock: identity.now });
}

/** POST over a real socket from `localAddress`, so the service sees that client address. */
function postFrom(
  url: string,
  localAddress: string,
  path: string,
  headers: Record<string, string>,
  body: string,
) {
  return new Promise<{ status: number; retryAfter: string | undefined; body: string }>(
    (resolve, reject) => {
      const req = httpRequest(
        `${url}${path}`,
        {
          method: "POST",
          localAddress,
          headers: { ...headers, "content-type": "application/json" },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk) => {
            text += chunk;
          });
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              retryAfter: res.headers["retry-after"] as string | undefined,
              body: text,
            }),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
}

for (const engine of testEngines()) {
  describe(`rate limits (${engine})`, () => {
    const opened: { close(): Promise<void> }[] = [];
    after(async () => {
      for (const item of opened.reverse()) await item.close();
    });
    const minuteLeft = engine === "sqlite" ? "60" : "≤60";
    async function open(env: Record<string, string> = LIMITS) {
      const identity = await openTestIdentity(engine, env);
      opened.push(identity);
      if (env.REDIS_URL && env.REDIS_URL === process.env.TEST_REDIS_URL) {
        await awaitFreshMinute(
          createRedisRateLimitStore(env.REDIS_URL, { clock: Date.now, onError: () => {} }),
        );
      } else if (!env.REDIS_URL && engine === "postgres") {
        await awaitFreshMinute(createDatabaseRateLimitStore(identity.service.database));
      }
      return identity;
    }

    it("lets exactly MINTS_PER_MINUTE mints through per user key, with RateLimit-* headers, then 429", async () => {
      const identity = await open();
      const { key } = await identity.userKey();
      const seen = [];
      for (let i = 0; i < 4; i++) {
        const response = await identity.mint(key);
        seen.push({ status: response.status, ...limitHeaders(engine, response) });
        if (response.status === 429) {
          assert.deepEqual(await response.json(), {
            error: "Too many requests",
            code: "rate_limited",
          });
        }
      }
      assert.deepEqual(seen, [
        { status: 201, limit: "3", remaining: "2", reset: minuteLeft, retryAfter: null },
        { status: 201, limit: "3", remaining: "1", reset: minuteLeft, retryAfter: null },
        { status: 201, limit: "3", remaining: "0", reset: minuteLeft, retryAfter: null },
        { status: 429, limit: "3", remaining: "0", reset: minuteLeft, retryAfter: minuteLeft },
      ]);
    });

    it("keeps other user keys unaffected, and reopens once the store's clock ends the window", async () => {
      const identity = await open();
      const first = await identity.userKey();
      const second = await identity.userKey(first.accountId);
      for (let i = 0; i < 3; i++) assert.equal((await identity.mint(first.key)).status, 201);
      assert.equal((await identity.mint(first.key)).status, 429);
      assert.equal((await identity.mint(second.key)).status, 201, "another key of the same person");
      identity.advance(45_000);
      const waiting = await identity.mint(first.key);
      assert.equal(waiting.status, 429);
      // The memory store's window follows the service's clock. PostgreSQL's follows its own,
      // which moving the service's clock does not move (its next window is tested in
      // rate-limit-clock.test.ts).
      if (engine === "sqlite") assert.equal(waiting.headers.get("retry-after"), "15");
      identity.advance(15_000);
      assert.equal((await identity.mint(first.key)).status, engine === "sqlite" ? 201 : 429);
    });

    it("counts failed verifications per partner key; successes are neither counted nor refused", async () => {
      const identity = await open();
      const partner = await identity.partner();
      const other = await identity.partner();
      const { key } = await identity.userKey();
      const token = await identity.token(key);
      const statuses = [];
      for (let i = 0; i < 5; i++) {
        statuses.push((await identity.verify(`Bearer ${partner.key}`, BAD_TOKEN)).status);
      }
      assert.deepEqual(statuses, [401, 401, 401, 401, 429]);
      const refused = await identity.verify(`Bearer ${partner.key}`, BAD_TOKEN);
      assert.deepEqual(
        { ...limitHeaders(engine, refused), body: await refused.json() },
        {
          limit: "4",
          remaining: "0",
          reset: minuteLeft,
          retryAfter: minuteLeft,
          body: { error: "Too many requests", code: "rate_limited" },
        },
      );
      const good = JSON.stringify({ sessionToken: token });
      for (let i = 0; i < 10; i++) {
        assert.equal((await identity.verify(`Bearer ${partner.key}`, good)).status, 200);
      }
      const elsewhere = await identity.verify(`Bearer ${other.key}`, BAD_TOKEN);
      assert.equal(elsewhere.status, 401, "another partner is unaffected");
      assert.equal(elsewhere.headers.get("ratelimit-limit"), null, "a plain failure stays uniform");
    });

    it("counts unknown and revoked keys per client address, on mint and verify alike", async () => {
      const identity = await open();
      const server = await startServer(identity.service, { port: 0, host: "127.0.0.1" });
      try {
        const partner = await identity.partner();
        await identity.db
          .updateTable("partner_keys")
          .set({ revoked_at: identity.now() })
          .where("id", "=", partner.keyId)
          .execute();
        const unknownPartner = { authorization: `Bearer ${(await identity.partner()).key}x` };
        const revokedPartner = { authorization: `Bearer ${partner.key}` };
        const unknownUser = { authorization: "Bearer apu_unknown" };
        const from = (address: string, path: string, headers: Record<string, string>) =>
          postFrom(server.url, address, path, headers, BAD_TOKEN);

        assert.equal((await from("127.0.0.1", "/api/verify", unknownPartner)).status, 401);
        assert.equal((await from("127.0.0.1", "/api/verify", revokedPartner)).status, 403);
        const refused = await from("127.0.0.1", "/api/session-tokens", unknownUser);
        assert.deepEqual(
          { status: refused.status, body: JSON.parse(refused.body) },
          { status: 429, body: { error: "Too many requests", code: "rate_limited" } },
        );
        assert.equal(secondsLeft(engine, refused.retryAfter ?? null), minuteLeft);
        assert.equal((await from("127.0.0.1", "/api/verify", unknownPartner)).status, 429);
        // Another client address has its own budget.
        assert.equal((await from("127.0.0.2", "/api/verify", unknownPartner)).status, 401);
      } finally {
        // The server's close closes the service; the harness then only drops the database.
        await server.close();
        opened.splice(opened.indexOf(identity), 1);
        await identity.database.drop();
      }
    });

    it("keeps limiting in each instance's memory while Redis cannot be reached", async () => {
      const identity = await open({ ...LIMITS, REDIS_URL: "redis://127.0.0.1:1" });
      const { key } = await identity.userKey();
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await identity.mint(key)).status);
      assert.deepEqual(statuses, [201, 201, 201, 429]);
    });

    it("sees a key once in an instance's memory, and again once its time is over", async () => {
      let now = 0;
      const store = createMemoryRateLimitStore(() => now);
      assert.equal(await store.seenOnce("jti-1", 1000), true);
      assert.equal(await store.seenOnce("jti-1", 1000), false);
      assert.equal(await store.seenOnce("jti-2", 1000), true);
      now = 1000;
      assert.equal(await store.seenOnce("jti-1", 1000), true);
    });

    if (engine === "postgres") {
      it("sees a key once across instances on one PostgreSQL, however many ask at once", async () => {
        const identity = await open();
        const second = await secondInstance(identity, LIMITS);
        opened.push(second);
        const stores = [identity.service.database, second.database].map((counters) =>
          createDatabaseRateLimitStore(counters),
        );
        const key = `jti-${randomUUID()}`;
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (stores[i % 2] as (typeof stores)[number]).seenOnce(key, 120_000),
          ),
        );
        assert.equal(answers.filter(Boolean).length, 1);
      });
    }

    if (engine === "postgres") {
      it("shares the counters between instances on one PostgreSQL: exactly the limit passes", async () => {
        const identity = await open();
        const second = await secondInstance(identity, LIMITS);
        opened.push(second);
        const { key } = await identity.userKey();
        const statuses = [];
        for (const app of [identity.app, second, identity.app, second, identity.app]) {
          const response = await app.request("/api/session-tokens", {
            method: "POST",
            headers: { authorization: `Bearer ${key}` },
          });
          statuses.push(response.status);
        }
        assert.deepEqual(statuses, [201, 201, 201, 429, 429]);
      });
    }

    if (engine === "postgres") {
      it("hands every concurrent hit a distinct count when hits are batched, across instances", async () => {
        const identity = await open();
        const second = await secondInstance(identity, LIMITS);
        opened.push(second);
        const stores = [identity.service.database, second.database].map((counters) =>
          createDatabaseRateLimitStore(counters),
        );
        // 120 hits at once on one counter, half through each instance's store: each store
        // batches its hits, and the two batch streams interleave on the row.
        const hits = await Promise.all(
          Array.from({ length: 120 }, (_, i) =>
            (stores[i % 2] as (typeof stores)[number]).hit("batch-test", 60_000),
          ),
        );
        assert.deepEqual(
          hits.map((hit) => hit.count).sort((a, b) => a - b),
          Array.from({ length: 120 }, (_, i) => i + 1),
        );
        for (const hit of hits) assert.ok(hit.resetMs > 0 && hit.resetMs <= 60_000);
        const row = await identity.db
          .selectFrom("rate_limits")
          .select("count")
          .where("key", "=", "batch-test")
          .executeTakeFirstOrThrow();
        assert.equal(Number(row.count), 120);
      });

      it("adds the hits asked for in one turn in one upsert", async () => {
        const identity = await open();
        const counters = identity.service.database;
        let upserts = 0;
        const store = createDatabaseRateLimitStore({
          ...counters,
          write: (work) => {
            upserts++;
            return counters.write(work);
          },
        });
        const hits = await Promise.all(
          Array.from({ length: 20 }, () => store.hit("one-turn-test", 60_000)),
        );
        assert.deepEqual(
          hits.map((hit) => hit.count),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        assert.equal(upserts, 1);
      });

      it("keeps the counters in an unlogged table (no WAL flush per hit)", async () => {
        const identity = await open();
        const { rows } = await sql<{ relpersistence: string }>`
          SELECT relpersistence FROM pg_class WHERE relname = 'rate_limits'`.execute(identity.db);
        assert.deepEqual(rows, [{ relpersistence: "u" }]);
      });

      it("lets exactly the limit through when mints arrive at once on two instances", async () => {
        const identity = await open();
        const second = await secondInstance(identity, LIMITS);
        opened.push(second);
        const { key } = await identity.userKey();
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            (i % 2 ? second : identity.app).request("/api/session-tokens", {
              method: "POST",
              headers: { authorization: `Bearer ${key}` },
            }),
          ),
        );
        const statuses = answers.map((answer) => answer.status);
        assert.equal(statuses.filter((status) => status === 201).length, 3);
        assert.equal(statuses.filter((status) => status === 429).length, 9);
      });
    }

    if (process.env.TEST_REDIS_URL) {
      it("sees a key once across instances through Redis", async () => {
        const url = process.env.TEST_REDIS_URL as string;
        const options = { clock: Date.now, onError: (error: Error) => assert.fail(error) };
        const stores = [
          createRedisRateLimitStore(url, options),
          createRedisRateLimitStore(url, options),
        ];
        const key = `jti-${randomUUID()}`;
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (stores[i % 2] as (typeof stores)[number]).seenOnce(key, 120_000),
          ),
        );
        assert.equal(answers.filter(Boolean).length, 1);
        for (const store of stores) await store.close();
      });

      it("shares the counters between instances through Redis when REDIS_URL is set", async () => {
        const env = { ...LIMITS, REDIS_URL: process.env.TEST_REDIS_URL as string };
        const identity = await open(env);
        const second = await secondInstance(identity, env);
        opened.push(second);
        const partner = await identity.partner();
        const statuses = [];
        // Concurrent, across both instances: the counter is atomic, so exactly four fail plainly.
        const apps = [identity.app, second];
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (apps[i % 2] as typeof identity.app).request("/api/verify", {
              method: "POST",
              headers: {
                authorization: `Bearer ${partner.key}`,
                "content-type": "application/json",
              },
              body: BAD_TOKEN,
            }),
          ),
        );
        for (const answer of answers) statuses.push(answer.status);
        assert.equal(statuses.filter((status) => status === 401).length, 4);
        assert.equal(statuses.filter((status) => status === 429).length, 6);
      });
    }
  });
}
