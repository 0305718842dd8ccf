import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { startTcpProxy, testEngines } from "@agentpass/db/testing";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config.ts";
import type { Clock } from "../src/domain/clock.ts";
import {
  createDatabaseRateLimitStore,
  createRateLimiter,
  createRedisRateLimitStore,
  type RateLimitStore,
} from "../src/infra/rate-limit.ts";
import { openIdentityService } from "../src/service.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const MINUTE = 60_000;
const REDIS_URL = process.env.TEST_REDIS_URL;

/**
 * Two clocks 30 s apart near the real time, placed so that they read different minutes for the
 * next 15 s (the first at second 45 of its minute, the second at second 15 of the next): the
 * instances disagree on the window whenever the test runs.
 */
function clocksInDifferentMinutes(): [Clock, Clock] {
  const offset = 45_000 - (Date.now() % MINUTE);
  return [() => Date.now() + offset, () => Date.now() + offset + 30_000];
}

/**
 * Waits, if need be, until the store's current window has `atLeastMs` left by the store's own
 * clock, so that a test's hits cannot straddle two windows. Answers the milliseconds left.
 */
async function awaitFreshWindow(store: RateLimitStore, windowMs: number, atLeastMs: number) {
  const probe = `window-probe:${randomUUID()}`;
  const { resetMs } = await store.hit(probe, windowMs);
  if (resetMs >= atLeastMs) return resetMs;
  await sleep(resetMs + 10);
  return (await store.hit(probe, windowMs)).resetMs;
}

/** A Redis connection of the test's own; it fails the test if TEST_REDIS_URL cannot be reached. */
async function connectRedis(url: string) {
  const redis = new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on("error", () => {}); // the failed command below carries it
  try {
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  return redis;
}

/** One shared store under test: `open` makes the store of one more instance of the service. */
interface SharedStore {
  open(clock: Clock): RateLimitStore;
  /** What the stores reported through `onError`: a test expects none. */
  errors: Error[];
  close(): Promise<void>;
}

/** The shared stores of this run: PostgreSQL with TEST_DATABASE_URL, Redis with TEST_REDIS_URL. */
function sharedStores() {
  const stores: { name: string; setUp(): Promise<SharedStore> }[] = [];
  if (testEngines().includes("postgres")) {
    stores.push({
      name: "PostgreSQL",
      async setUp() {
        const identity = await openTestIdentity("postgres");
        return {
          open: () => createDatabaseRateLimitStore(identity.service.database),
          errors: [],
          close: () => identity.close(),
        };
      },
    });
  }
  if (REDIS_URL) {
    stores.push({
      name: "Redis",
      async setUp() {
        await (await connectRedis(REDIS_URL)).quit();
        const errors: Error[] = [];
        const opened: RateLimitStore[] = [];
        return {
          open(clock) {
            const store = createRedisRateLimitStore(REDIS_URL, {
              clock,
              onError: (error) => errors.push(error),
            });
            opened.push(store);
            return store;
          },
          errors,
          async close() {
            for (const store of opened) await store.close();
          },
        };
      },
    });
  }
  return stores;
}

for (const shared of sharedStores()) {
  describe(`rate-limit store in ${shared.name}: windows by the store's clock`, () => {
    const setUps: SharedStore[] = [];
    after(async () => {
      for (const setUp of setUps) await setUp.close();
    });
    async function setUp() {
      const opened = await shared.setUp();
      setUps.push(opened);
      return opened;
    }

    it("gives one shared count to callers whose clocks are 30 s apart", async () => {
      const { open, errors } = await setUp();
      await awaitFreshWindow(open(Date.now), MINUTE, 5_000);
      // One limiter per instance, each over its instance's store and clock, under one name.
      const name = `skew-${randomUUID()}`;
      const limiters = clocksInDifferentMinutes().map((clock) =>
        createRateLimiter(open(clock), { name, limit: 10, windowMs: MINUTE, clock }),
      );
      let passed = 0;
      for (let i = 0; i < 100; i++) {
        const limiter = limiters[i % 2] as (typeof limiters)[number];
        if ((await limiter.take("one-key")).ok) passed++;
      }
      assert.equal(passed, 10);
      assert.deepEqual(errors, []);
    });

    it("starts a new window when the store's clock has passed the end of the last", async () => {
      const { open, errors } = await setUp();
      // A clock stuck in the past: the store must not follow it.
      const store = open(() => Date.UTC(2020, 0, 1));
      const bucket = `short-${randomUUID()}`;
      await awaitFreshWindow(store, 1000, 500);
      const hits = [];
      for (let i = 0; i < 3; i++) hits.push(await store.hit(bucket, 1000));
      assert.deepEqual(
        hits.map((hit) => hit.count),
        [1, 2, 3],
      );
      for (const hit of hits) assert.ok(hit.resetMs > 0 && hit.resetMs <= 1000, `${hit.resetMs}`);
      await sleep((hits[2]?.resetMs ?? 0) + 10);
      assert.equal((await store.hit(bucket, 1000)).count, 1);
      assert.deepEqual(errors, []);
    });
  });
}

for (const engine of testEngines()) {
  describe(`mint limits across instances whose clocks disagree (${engine})`, () => {
    const opened: { close(): Promise<void> }[] = [];
    after(async () => {
      for (const item of opened.reverse()) await item.close();
    });
    async function open(env: Record<string, string>) {
      const identity = await openTestIdentity(engine, env);
      opened.push(identity);
      return identity;
    }
    /** Another instance of the service on the same database, with a clock of its own. */
    async function openInstance(identity: TestIdentity, env: Record<string, string>, clock: Clock) {
      const loaded = loadConfig({ ...identity.env, LOG_LEVEL: "silent", ...env });
      if (!loaded.ok) throw new Error(loaded.error);
      const service = await openIdentityService(loaded.config, { clock });
      opened.push(service);
      return service;
    }

    /**
     * 300 mints with one user key, alternating between two instances 30 s apart, counted in the
     * store that `env` selects (and `openProbe` reaches too): exactly MINTS_PER_MINUTE pass, and
     * every refusal's Retry-After is what the store's clock has left of its window.
     */
    async function mintAcrossSkewedInstances(
      env: Record<string, string>,
      openProbe: (identity: TestIdentity) => RateLimitStore,
    ) {
      const limited = { ...env, MINTS_PER_MINUTE: "30" };
      const identity = await open(limited);
      const { key } = await identity.userKey();
      const probe = openProbe(identity);
      opened.push(probe);
      const leftBefore = await awaitFreshWindow(probe, MINUTE, 20_000);
      const instances = [];
      for (const clock of clocksInDifferentMinutes()) {
        instances.push(await openInstance(identity, limited, clock));
      }
      const answers = [];
      for (let i = 0; i < 300; i++) {
        const instance = instances[i % 2] as (typeof instances)[number];
        answers.push(
          await instance.request("/api/session-tokens", {
            method: "POST",
            headers: { authorization: `Bearer ${key}` },
          }),
        );
      }
      const leftAfter = (await probe.hit(`window-probe:${randomUUID()}`, MINUTE)).resetMs;
      const statuses = answers.map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 201).length, 30);
      assert.equal(statuses.filter((status) => status === 429).length, 270);
      for (const answer of answers.filter((each) => each.status === 429)) {
        const retryAfter = Number(answer.headers.get("retry-after"));
        assert.ok(
          retryAfter >= Math.floor(leftAfter / 1000) && retryAfter <= Math.ceil(leftBefore / 1000),
          `Retry-After ${retryAfter} s, while the store's window had ${leftBefore}…${leftAfter} ms left`,
        );
      }
    }

    if (engine === "postgres") {
      it("lets exactly MINTS_PER_MINUTE through two instances 30 s apart, by PostgreSQL's clock", async () => {
        await mintAcrossSkewedInstances({}, (identity) =>
          createDatabaseRateLimitStore(identity.service.database),
        );
      });
    }

    if (REDIS_URL) {
      it("lets exactly MINTS_PER_MINUTE through two instances 30 s apart, by Redis's clock", async () => {
        await (await connectRedis(REDIS_URL)).quit();
        const errors: Error[] = [];
        await mintAcrossSkewedInstances({ REDIS_URL }, () =>
          createRedisRateLimitStore(REDIS_URL, {
            clock: Date.now,
            onError: (error) => errors.push(error),
          }),
        );
        assert.deepEqual(errors, [], "the probe reached Redis");
      });

      it("answers mints promptly while Redis hangs, and counts in Redis again once it answers", {
        timeout: 60_000,
      }, async (t) => {
        const redis = await connectRedis(REDIS_URL);
        const direct = new URL(REDIS_URL);
        const proxy = await startTcpProxy({
          host: direct.hostname,
          port: Number(direct.port || 6379),
        });
        const viaProxy = new URL(direct);
        viaProxy.host = `127.0.0.1:${proxy.port}`;
        try {
          const identity = await open({ MINTS_PER_MINUTE: "1000", REDIS_URL: viaProxy.toString() });
          const { id, key } = await identity.userKey();
          const counter = `agentpass:ratelimit:mintsPerUserKey:${id}`;
          const countInRedis = async () => Number(await redis.hget(counter, "count"));
          const probe = createRedisRateLimitStore(REDIS_URL, { clock: Date.now, onError() {} });
          opened.push(probe);
          await awaitFreshWindow(probe, MINUTE, 10_000);
          for (let i = 0; i < 3; i++) assert.equal((await identity.mint(key)).status, 201);
          assert.equal(await countInRedis(), 3);

          // Connections stay open and nothing comes back, as from a Redis stopped with SIGSTOP,
          // until the mints are answered: answered at all, they did not wait for Redis (no
          // bound in ms, which a busy machine stretches; the test's timeout is the backstop).
          proxy.stall();
          const statuses = [];
          for (let i = 0; i < 20; i++) statuses.push((await identity.mint(key)).status);
          proxy.resume();
          for (const status of statuses) assert.ok(status === 201 || status === 429, `${status}`);

          // Back to Redis: a mint's hit is counted there, and its answer carries Redis's count.
          let counted = false;
          let tries = 0;
          while (!counted) {
            tries++;
            const before = await countInRedis();
            const answer = await identity.mint(key);
            const count = await countInRedis();
            counted =
              answer.status === 201 &&
              count === before + 1 &&
              answer.headers.get("ratelimit-remaining") === String(1000 - count);
            if (!counted) await sleep(200);
          }
          t.diagnostic(
            `20 mints answered while Redis hung; counted in Redis again on try ${tries}`,
          );
        } finally {
          await proxy.close();
          redis.disconnect();
        }
      });
    }
  });
}
