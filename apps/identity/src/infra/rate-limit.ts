import { createRequire } from "node:module";
import { createPreparedWrite, type OpenedDatabase } from "@agentpass/db";
import { COMMON_ERRORS, HttpError } from "@agentpass/http";
import type { Redis } from "ioredis";
import { LRUCache } from "lru-cache";
import type { Clock } from "../domain/clock.ts";
import type { IdentityDatabase } from "../store/schema.ts";

/** What one counted attempt learned: whether it may go on, and the window's budget. */
export interface RateLimitResult {
  ok: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window ends (at least 1); the Retry-After of a refusal. */
  resetSeconds: number;
}

export interface RateLimiter {
  /** Counts one attempt for `key`; refused once `limit` were counted in the current window. */
  take(key: string): Promise<RateLimitResult>;
  /**
   * The refusal this process already answers `key` with until its window ends, or null; counts
   * nothing and asks no store. For budgets counted after the work (failures only), checked
   * before it: once a key is past its budget, its requests cost no work here.
   */
  refusal(key: string): RateLimitResult | null;
}

/** One counted hit: the count so far in the current window, and the milliseconds left in it. */
interface RateLimitHit {
  count: number;
  resetMs: number;
}

/**
 * Where the counters live. `hit` adds one to `bucket` in the current window of `windowMs` and
 * answers the count so far, atomically for every process sharing the store. The store's own
 * clock decides the window: instances whose clocks disagree still count in one window.
 */
export interface RateLimitStore {
  hit(bucket: string, windowMs: number): Promise<RateLimitHit>;
  /**
   * True the first time `key` is seen within `ttlMs`, false every later time, for every process
   * sharing the store: a DPoP proof's `jti` is used once on every instance, not once on each.
   */
  seenOnce(key: string, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Fixed-window limiter: at most `limit` takes per `windowMs` for each key. Once a key is refused,
 * this process refuses it without touching the store until its window ends, so a flood past the
 * limit costs no writes. The window's end is kept as a duration from the store's answer, so a
 * local clock that is off by any amount neither shortens nor stretches a refusal. `onRefused`
 * hears of every refusal (the metrics count them by limiter).
 */
export function createRateLimiter(
  store: RateLimitStore,
  options: {
    name: string;
    limit: number;
    windowMs: number;
    clock: Clock;
    onRefused?: () => void;
  },
): RateLimiter {
  const { name, limit, windowMs, clock, onRefused } = options;
  // Keys refused lately, with when their window ends; the oldest are forgotten past the bound.
  const refusedUntil = new LRUCache<string, number>({ max: 10_000 });
  function refused(key: string): RateLimitResult | null {
    const now = clock();
    const until = refusedUntil.get(key) ?? 0;
    return until > now ? refusal(limit, until - now) : null;
  }
  return {
    refusal(key) {
      const answer = refused(key);
      if (answer) onRefused?.();
      return answer;
    },
    async take(key) {
      const answer = refused(key);
      if (answer) {
        onRefused?.();
        return answer;
      }
      const { count, resetMs } = await store.hit(`${name}:${key}`, windowMs);
      if (count <= limit) {
        return { ok: true, limit, remaining: limit - count, resetSeconds: toSeconds(resetMs) };
      }
      const answeredAt = clock();
      refusedUntil.set(key, answeredAt + resetMs);
      onRefused?.();
      return refusal(limit, resetMs);
    },
  };
}

function refusal(limit: number, resetMs: number): RateLimitResult {
  return { ok: false, limit, remaining: 0, resetSeconds: toSeconds(resetMs) };
}

/** Whole seconds until the window ends, at least 1: a Retry-After of 0 would invite a retry now. */
function toSeconds(resetMs: number): number {
  return Math.max(1, Math.ceil(resetMs / 1000));
}

/**
 * The headers of a counted answer: the RateLimit-* fields of the IETF httpapi draft
 * (limit, remaining, seconds to reset) and, on a refusal, Retry-After.
 */
export function rateLimitHeaders(result: RateLimitResult): Record<string, string> {
  const headers: Record<string, string> = {
    "RateLimit-Limit": String(result.limit),
    "RateLimit-Remaining": String(result.remaining),
    "RateLimit-Reset": String(result.resetSeconds),
  };
  if (!result.ok) headers["Retry-After"] = String(result.resetSeconds);
  return headers;
}

/** The JSON answer past a rate limit: 429 with the RateLimit-* and Retry-After headers. */
export function tooManyRequests(result: RateLimitResult): HttpError {
  return new HttpError(COMMON_ERRORS.rate_limited, { headers: rateLimitHeaders(result) });
}

/**
 * Counters of this process only, by its clock: for SQLite, whose one file serves one service
 * process, and for the Redis store while Redis cannot answer.
 */
export function createMemoryRateLimitStore(clock: Clock): RateLimitStore {
  const windows = new Map<string, { end: number; count: number }>();
  /** Keys seen once, with when they may be forgotten. */
  const seen = new Map<string, number>();
  /**
   * The size at which expired keys are next swept out: twice what a sweep left, so a map full of
   * live keys (over 833 proofs a second for their 2 minutes) is not walked on every call.
   */
  let sweepAt = 100_000;
  return {
    async seenOnce(key, ttlMs) {
      const now = clock();
      const until = seen.get(key);
      if (until !== undefined && until > now) return false;
      if (seen.size >= sweepAt) {
        for (const [old, end] of seen) if (end <= now) seen.delete(old);
        sweepAt = Math.max(100_000, 2 * seen.size);
      }
      seen.set(key, now + ttlMs);
      return true;
    },
    async hit(bucket, windowMs) {
      const now = clock();
      const end = now - (now % windowMs) + windowMs;
      let window = windows.get(bucket);
      if (!window || window.end !== end) {
        if (windows.size >= 100_000) sweepWindows(windows, now);
        window = { end, count: 0 };
        windows.set(bucket, window);
      }
      return { count: ++window.count, resetMs: end - now };
    },
    async close() {
      windows.clear();
      seen.clear();
    },
  };
}

/**
 * A key seen once on SQLite: a row of `rate_limits` whose window starts when it was first seen
 * (parameters: key, now), forgotten by the same purge as PostgreSQL's (`SEE_ONCE`).
 */
const SQLITE_SEE_ONCE = `INSERT INTO rate_limits (key, window_start, count) VALUES (?, ?, 1)
  ON CONFLICT (key) DO UPDATE SET count = rate_limits.count + 1
  RETURNING count` as const;

/**
 * SQLite's store: counters in the memory of the one process its file serves, and keys seen once
 * in its `rate_limits` table, so that a DPoP proof used once stays used across a restart and on
 * every instance that opens the file.
 */
export function createSqliteRateLimitStore(
  database: CounterDatabase,
  clock: Clock,
): RateLimitStore {
  const counters = createMemoryRateLimitStore(clock);
  const seeOnce = createPreparedWrite<{ count: number }>(database, SQLITE_SEE_ONCE);
  return {
    hit: counters.hit,
    async seenOnce(key) {
      const [row] = await seeOnce(`seen:${key}`, clock());
      return Number(row?.count) === 1;
    },
    close: counters.close,
  };
}

/** Milliseconds since the epoch by the PostgreSQL server's clock, read when evaluated. */
const DATABASE_NOW_MS = "floor(extract(epoch FROM clock_timestamp()) * 1000)";

/**
 * One upsert counts `n` hits on a counter (parameters: key, window, window, n, window). The
 * window never moves back: an upsert that read the clock before the window turned but took the
 * row's lock after one that read it later counts into the newer window.
 */
const ADD_HITS = `INSERT INTO rate_limits (key, window_start, count)
  VALUES (?, (floor(${DATABASE_NOW_MS} / ?) * ?)::bigint, ?)
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN rate_limits.window_start >= excluded.window_start
      THEN rate_limits.count + excluded.count ELSE excluded.count END,
    window_start = greatest(rate_limits.window_start, excluded.window_start)
  RETURNING count, window_start + ? - ${DATABASE_NOW_MS} AS "resetMs"` as const;

/**
 * A key seen once is a row of `rate_limits` whose window starts when it was first seen, so the
 * purge of past windows forgets it once `keptMs` has passed (longer than any proof's window).
 * The count never resets: a key inserted once answers false ever after, until it is purged.
 */
const SEE_ONCE = `INSERT INTO rate_limits (key, window_start, count)
  VALUES (?, ${DATABASE_NOW_MS}::bigint, 1)
  ON CONFLICT (key) DO UPDATE SET count = rate_limits.count + 1
  RETURNING count` as const;

/** What the counters in PostgreSQL write through: a prepared write, counted as every write. */
export type CounterDatabase = Pick<OpenedDatabase<IdentityDatabase>, "write" | "handles">;

/**
 * Counters in the `rate_limits` table: every instance on one PostgreSQL shares them, and the
 * server's clock decides each window, so an instance whose clock is off cannot start a new one.
 *
 * Hits on one counter are batched: an upsert starts in the event loop's check phase, so the hits
 * read from the sockets in one turn share it; while it is in flight, further hits wait, and the
 * next upsert adds them all at once (`count + n`) and hands each its own count in arrival order
 * (`total - n + 1` … `total`). The counts stay exact across instances — each hit gets a distinct
 * count, as if the hits had been upserted one by one — but a busy key costs one round trip per
 * batch instead of one per hit, each waiting for the row's lock. The upsert is a prepared
 * statement, sent where the hot reads go (`createPreparedWrite`).
 *
 * Counters of past windows are deleted off the request path (`store/purge.ts`).
 */
export function createDatabaseRateLimitStore(database: CounterDatabase): RateLimitStore {
  /** Hits waiting for their counter's next upsert, by counter. */
  const waiting = new Map<string, PromiseWithResolvers<RateLimitHit>[]>();
  const inFlight = new Set<string>();
  const addHits = createPreparedWrite<{ count: number | string; resetMs: number | string }>(
    database,
    ADD_HITS,
  );
  const seeOnce = createPreparedWrite<{ count: number | string }>(database, SEE_ONCE);

  async function add(bucket: string, windowMs: number, n: number): Promise<RateLimitHit> {
    const [row] = await addHits(bucket, windowMs, windowMs, n, windowMs);
    if (!row) throw new Error("the rate-limit upsert returned no row");
    return { count: Number(row.count), resetMs: Number(row.resetMs) };
  }

  async function flush(bucket: string, windowMs: number): Promise<void> {
    const batch = waiting.get(bucket) ?? [];
    waiting.delete(bucket);
    inFlight.add(bucket);
    try {
      const { count: total, resetMs } = await add(bucket, windowMs, batch.length);
      for (const [index, hit] of batch.entries()) {
        hit.resolve({ count: total - batch.length + 1 + index, resetMs });
      }
    } catch (error) {
      for (const hit of batch) hit.reject(error);
    } finally {
      inFlight.delete(bucket);
      if (waiting.has(bucket)) setImmediate(flush, bucket, windowMs);
    }
  }

  return {
    hit(bucket, windowMs) {
      const hit = Promise.withResolvers<RateLimitHit>();
      const batch = waiting.get(bucket);
      if (batch) {
        batch.push(hit);
      } else {
        waiting.set(bucket, [hit]);
        if (!inFlight.has(bucket)) setImmediate(flush, bucket, windowMs);
      }
      return hit.promise;
    },
    async seenOnce(key) {
      // Kept past any proof's window by the purge of `rate_limits` (RATE_LIMIT_RETENTION_MS).
      const [row] = await seeOnce(`seen:${key}`);
      return Number(row?.count) === 1;
    },
    async close() {},
  };
}

// One round trip: count in the window that Redis's own clock (TIME) is in. A counter is one hash
// (its window's start, its count), started afresh with its expiry once the window has turned.
// Scripts replicate their effects, so TIME is allowed.
const HIT_SCRIPT = `local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local windowMs = tonumber(ARGV[1])
local windowStart = now - now % windowMs
local count = 1
if tonumber(redis.call('HGET', KEYS[1], 'start')) == windowStart then
  count = redis.call('HINCRBY', KEYS[1], 'count', 1)
else
  redis.call('HSET', KEYS[1], 'start', windowStart, 'count', 1)
  redis.call('PEXPIREAT', KEYS[1], windowStart + windowMs)
end
return {count, windowStart + windowMs - now}`;

/** How long a Redis command may take before its hit is counted in memory instead. */
const REDIS_COMMAND_TIMEOUT_MS = 1000;
/** After a failed command, hits are counted in memory this long before Redis is tried again. */
const REDIS_RETRY_AFTER_MS = 3000;

/**
 * Counters in Redis (`REDIS_URL`): shared by every instance, whatever the database, windowed by
 * Redis's clock. While Redis cannot be reached or does not answer in time, each instance counts
 * in its own memory rather than failing every request, making it wait, or dropping its limits;
 * `onError` hears of it once per outage. A command that failed sends the hits of the next few
 * seconds to memory at once, so a hung Redis delays one request per retry, not every request.
 */
export function createRedisRateLimitStore(
  url: string,
  options: { clock: Clock; onError: (error: Error) => void },
): RateLimitStore {
  // Loaded only when REDIS_URL is set: its code is ~20 MB of a process's memory.
  const { Redis: RedisClient } = createRequire(import.meta.url)("ioredis") as {
    Redis: typeof Redis;
  };
  const redis = new RedisClient(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: REDIS_COMMAND_TIMEOUT_MS,
  });
  const fallback = createMemoryRateLimitStore(options.clock);
  let reported = false;
  /** Until then (`performance.now()`), hits go to memory without asking Redis. */
  let inMemoryUntil = 0;
  function fail(error: Error) {
    if (!reported) options.onError(error);
    reported = true;
  }
  // Requests that come before the first connection settles wait for it rather than count apart,
  // but never longer than a command may take.
  const settled = new Promise((resolve) => {
    redis.once("ready", resolve);
    redis.once("error", resolve);
    setTimeout(resolve, REDIS_COMMAND_TIMEOUT_MS).unref();
  });
  redis.on("error", fail);
  redis.on("ready", () => {
    inMemoryUntil = 0;
  });
  return {
    async hit(bucket, windowMs) {
      await settled;
      if (performance.now() < inMemoryUntil) return fallback.hit(bucket, windowMs);
      try {
        const [count, resetMs] = (await redis.eval(
          HIT_SCRIPT,
          1,
          `agentpass:ratelimit:${bucket}`,
          windowMs,
        )) as [number, number];
        reported = false;
        return { count, resetMs };
      } catch (error) {
        fail(error as Error);
        inMemoryUntil = performance.now() + REDIS_RETRY_AFTER_MS;
        return fallback.hit(bucket, windowMs);
      }
    },
    async seenOnce(key, ttlMs) {
      await settled;
      if (performance.now() < inMemoryUntil) return fallback.seenOnce(key, ttlMs);
      try {
        const set = await redis.set(`agentpass:seen:${key}`, "1", "PX", ttlMs, "NX");
        reported = false;
        return set === "OK";
      } catch (error) {
        fail(error as Error);
        inMemoryUntil = performance.now() + REDIS_RETRY_AFTER_MS;
        return fallback.seenOnce(key, ttlMs);
      }
    },
    async close() {
      redis.disconnect();
      await fallback.close();
    },
  };
}

function sweepWindows(windows: Map<string, { end: number }>, now: number) {
  for (const [bucket, window] of windows) if (window.end <= now) windows.delete(bucket);
}
