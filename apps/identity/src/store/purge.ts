import type { OpenedDatabase } from "@agentpass/db";
import { sql } from "kysely";
import type { IdentityDatabase } from "./schema.ts";

/** Rows deleted by one statement: a purge never holds a table's locks for long. */
export const PURGE_BATCH = 1000;
/** Rate-limit counters are kept a day past their window (none lasts longer than 15 minutes). */
const RATE_LIMIT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** What expires, by table: the key that names a row, and the column that says when it ends. */
const EXPIRING = [
  { table: "sign_in_codes", key: "id", column: "expires_at" },
  { table: "device_codes", key: "device_hash", column: "expires_at" },
  { table: "web_sessions", key: "id_hash", column: "expires_at" },
  { table: "remembered_browsers", key: "browser_hash, email", column: "expires_at" },
  { table: "oauth_codes", key: "code_hash", column: "expires_at" },
  { table: "rate_limits", key: "key", column: "window_start" },
] as const;

/**
 * Deletes what has expired by `now`: sign-in codes (with the addresses of people who never
 * signed up), device codes, web sessions, remembered browsers and old rate-limit counters.
 * Each statement deletes at most `PURGE_BATCH` rows found through the table's index on its
 * expiry, so a purge costs in proportion to what it deletes, never a scan of the table.
 * Answers the number of rows deleted, by table.
 */
export async function purgeExpired(
  database: Pick<OpenedDatabase<IdentityDatabase>, "write">,
  now: number,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const { table, key, column } of EXPIRING) {
    const before = table === "rate_limits" ? now - RATE_LIMIT_RETENTION_MS : now;
    deleted[table] = 0;
    for (;;) {
      const result = await database.write((db) =>
        sql`DELETE FROM ${sql.table(table)} WHERE (${sql.raw(key)}) IN (
          SELECT ${sql.raw(key)} FROM ${sql.table(table)} WHERE ${sql.ref(column)} < ${before}
          LIMIT ${PURGE_BATCH})`.execute(db),
      );
      const count = Number(result.numAffectedRows ?? 0n);
      deleted[table] += count;
      if (count < PURGE_BATCH) break;
    }
  }
  return deleted;
}

/** How often each instance purges. Several instances purging at once only share the work. */
export const PURGE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Runs `purgeExpired` off the request path: soon after start, then every `PURGE_INTERVAL_MS`,
 * one run at a time. A failed run is reported and the next one tries again.
 */
export function schedulePurges(
  database: Pick<OpenedDatabase<IdentityDatabase>, "write">,
  clock: () => number,
  onError: (error: unknown) => void,
) {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= purgeExpired(database, clock())
      .then(() => undefined, onError)
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(run, 5_000);
  const every = setInterval(run, PURGE_INTERVAL_MS);
  first.unref();
  every.unref();
  return {
    /** Stops scheduling and waits for a run in progress. */
    async stop() {
      clearTimeout(first);
      clearInterval(every);
      await running;
    },
  };
}
