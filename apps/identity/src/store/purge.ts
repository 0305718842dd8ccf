import type { Engine, StoreDatabase } from "@agentpass/db";
import { sql } from "kysely";
import { DEFAULT_RETENTION, type Retention } from "../config.ts";
import { KEY_CHANGE_RETENTION_MS } from "./key-changes.ts";
import type { IdentityDatabase } from "./schema.ts";

/** Rows deleted by one statement: a purge never holds a table's locks for long. */
export const PURGE_BATCH = 1000;
/** Rate-limit counters are kept a day past their window (none lasts longer than an hour). */
const RATE_LIMIT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A registered client no code was issued to is kept this long (RFC 7591 lets anyone register). */
export const UNUSED_CLIENT_LIFETIME_MS = 24 * 60 * 60 * 1000;

/** A table whose rows expire: see `EXPIRING`. */
interface ExpiringTable {
  table: string;
  /** When a row ends, less `keptMs`; indexed (with `unlessSet`, by a partial index). */
  column: string;
  keptMs: number;
  /** A column that, once set, keeps the row (an OAuth client a code was issued to). */
  unlessSet?: string;
  /** The column holds a UTC day (`YYYY-MM-DD`), not epoch milliseconds. */
  day?: boolean;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * What expires, by table: the column that says when a row ends (each has an index), and how
 * long past it the row is kept. Codes, sessions and counters end when they expire; the rest
 * after their *_RETENTION_DAYS: audit events, partners' daily counts, a person's record of the
 * partners that learned their email (after the partner last verified), and revoked keys (their
 * grants go with them).
 */
const expiringTables = (retention: Retention): readonly ExpiringTable[] => [
  { table: "sign_in_codes", column: "expires_at", keptMs: 0 },
  { table: "device_codes", column: "expires_at", keptMs: 0 },
  { table: "web_sessions", column: "expires_at", keptMs: 0 },
  { table: "remembered_browsers", column: "expires_at", keptMs: 0 },
  { table: "oauth_codes", column: "expires_at", keptMs: 0 },
  { table: "rate_limits", column: "window_start", keptMs: RATE_LIMIT_RETENTION_MS },
  { table: "key_changes", column: "at", keptMs: KEY_CHANGE_RETENTION_MS },
  {
    table: "oauth_clients",
    column: "created_at",
    keptMs: UNUSED_CLIENT_LIFETIME_MS,
    unlessSet: "last_used_at",
  },
  { table: "instances", column: "seen_at", keptMs: DAY_MS },
  // Agents never activated (waiting, or denied) and hosts never linked to a person, a day on
  // (Agent Auth Protocol section 10.9): deleted, not revoked, since they never acted. A host's
  // agents go with it; one still in use (a registration retried) is kept by its last use.
  { table: "agents", column: "created_at", keptMs: DAY_MS, unlessSet: "activated_at" },
  { table: "agent_hosts", column: "last_used_at", keptMs: DAY_MS, unlessSet: "account_id" },
  { table: "audit_events", column: "at", keptMs: retention.auditDays * DAY_MS },
  { table: "usage_daily", column: "day", keptMs: retention.usageDays * DAY_MS, day: true },
  { table: "partner_activity", column: "last_at", keptMs: retention.activityDays * DAY_MS },
  {
    table: "departed_partner_activity",
    column: "last_at",
    keptMs: retention.activityDays * DAY_MS,
  },
  { table: "user_keys", column: "revoked_at", keptMs: retention.revokedKeyDays * DAY_MS },
  { table: "partner_keys", column: "revoked_at", keptMs: retention.revokedKeyDays * DAY_MS },
];

/** `expiringTables` with the default retention. */
export const EXPIRING = expiringTables(DEFAULT_RETENTION);

/**
 * One batch of a purge: at most `PURGE_BATCH` rows of `table` whose `column` is before
 * `before`, the oldest first, found through the index on `column` and deleted by their physical
 * address (PostgreSQL's `ctid`, SQLite's `rowid`). Deleting by key instead (`WHERE key IN
 * (SELECT key …)`) let PostgreSQL hash-join each batch against a sequential scan of the whole
 * table. The condition is checked again on the row deleted, so a row written since (a counter's
 * new window, a client just used) is kept. With `unlessSet`, only rows where that column is null
 * go.
 */
export function purgeBatch(
  engine: Engine,
  table: string,
  column: string,
  before: number | string,
  unlessSet?: string,
) {
  const address = sql.raw(engine === "postgres" ? "ctid" : "rowid");
  const ends = unlessSet
    ? sql`${sql.ref(column)} < ${before} AND ${sql.ref(unlessSet)} IS NULL`
    : sql`${sql.ref(column)} < ${before}`;
  const batch = sql`SELECT ${address} FROM ${sql.table(table)} WHERE ${ends}
    ORDER BY ${sql.ref(column)} LIMIT ${PURGE_BATCH}`;
  const found = engine === "postgres" ? sql`= ANY(ARRAY(${batch}))` : sql`IN (${batch})`;
  return sql`DELETE FROM ${sql.table(table)} WHERE ${address} ${found} AND ${ends}`;
}

/**
 * Deletes what has expired by `now` (`expiringTables`): sign-in codes (with the addresses of
 * people who never signed up), device codes, web sessions, remembered browsers, OAuth codes, old
 * rate-limit counters, old entries of the key change log, registered OAuth clients never used,
 * and what is past its retention; then the sealing keys retired longer than their retention.
 * Each statement deletes at most `PURGE_BATCH` rows found through the table's index on its
 * expiry (`purgeBatch`), so a purge costs in proportion to what it deletes, never a scan of the
 * table. Answers the rows deleted, by table.
 */
export async function purgeExpired(
  database: Pick<StoreDatabase<IdentityDatabase>, "write" | "engine">,
  now: number,
  retention: Retention = DEFAULT_RETENTION,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const { table, column, keptMs, unlessSet, day } of expiringTables(retention)) {
    const before = day ? new Date(now - keptMs).toISOString().slice(0, 10) : now - keptMs;
    const statement = purgeBatch(database.engine, table, column, before, unlessSet);
    deleted[table] = 0;
    for (;;) {
      const result = await database.write((db) => statement.execute(db));
      const count = Number(result.numAffectedRows ?? 0n);
      deleted[table] += count;
      if (count < PURGE_BATCH) break;
    }
  }
  const retired = now - retention.sealingKeyDays * DAY_MS;
  const sealing = await database.write((db) => purgeRetiredSealingKeys(retired).execute(db));
  deleted.sealing_keys = Number(sealing.numAffectedRows ?? 0n);
  return deleted;
}

/**
 * The sealing keys a newer key replaced before `before`: a key stops opening tokens issued after
 * its successor was made (+ clock skew), and those expire 5 minutes later, so after that it
 * opens nothing. The newest key is never among them. A few rows: no batches, no index.
 */
function purgeRetiredSealingKeys(before: number) {
  return sql`DELETE FROM sealing_keys WHERE EXISTS (SELECT 1 FROM sealing_keys newer
    WHERE newer.created_at > sealing_keys.created_at AND newer.created_at < ${before})`;
}

/** How often each instance purges. Several instances purging at once only share the work. */
const PURGE_INTERVAL_MS = 10 * 60 * 1000;

/**
 * Runs `purgeExpired` off the request path: soon after start, then every `PURGE_INTERVAL_MS`,
 * one run at a time. A failed run is reported and the next one tries again.
 */
export function schedulePurges(
  database: Pick<StoreDatabase<IdentityDatabase>, "write" | "engine">,
  clock: () => number,
  onError: (error: unknown) => void,
  retention: Retention = DEFAULT_RETENTION,
) {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= purgeExpired(database, clock(), retention)
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
