import { type Kysely, sql } from "kysely";
import type { Clock } from "./clock.ts";
import type { IdentityDatabase } from "./store/schema.ts";

export type RateLimitResult =
  | { ok: true; remaining: number; resetSeconds: number }
  | { ok: false; retryAfterSeconds: number };

export interface RateLimiter {
  /** Counts one attempt for `key`; refused once `limit` were counted in the current window. */
  take(key: string): Promise<RateLimitResult>;
}

/**
 * Fixed-window counters kept in the database, so every instance on one PostgreSQL shares them
 * (DESIGN.md section 8): at most `limit` takes per `windowMs` for each key. One upsert per
 * take; only the slow paths (sign-in, device codes) use it, never `/api/verify`.
 */
export function createRateLimiter(
  db: Kysely<IdentityDatabase>,
  options: { name: string; limit: number; windowMs: number; clock: Clock },
): RateLimiter {
  let takes = 0;
  return {
    async take(key) {
      const now = options.clock();
      const windowStart = now - (now % options.windowMs);
      const bucket = `${options.name}:${key}`;
      const row = await db
        .insertInto("rate_limits")
        .values({ key: bucket, window_start: windowStart, count: 1 })
        .onConflict((oc) =>
          oc.column("key").doUpdateSet({
            count: sql`CASE WHEN rate_limits.window_start = excluded.window_start THEN rate_limits.count + 1 ELSE 1 END`,
            window_start: sql`excluded.window_start`,
          }),
        )
        .returning("count")
        .executeTakeFirstOrThrow();
      if (++takes % 1000 === 0) {
        await db
          .deleteFrom("rate_limits")
          .where("window_start", "<", now - 86_400_000)
          .execute();
      }
      const resetSeconds = Math.max(1, Math.ceil((windowStart + options.windowMs - now) / 1000));
      if (Number(row.count) > options.limit) return { ok: false, retryAfterSeconds: resetSeconds };
      return { ok: true, remaining: options.limit - Number(row.count), resetSeconds };
    },
  };
}
