import type { CacheEntries, Change, ChangeCheck } from "@agentpass/db";
import { createPreparedRows, type StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

/**
 * Changes listed by one check at most: past this many since the previous check, the caches are
 * emptied rather than read change by change (a bulk import, an instance idle for long).
 */
const MAX_LISTED_CHANGES = 1000;

/** How long the change log keeps a change: an instance further behind empties its caches. */
export const KEY_CHANGE_RETENTION_MS = 60 * 60 * 1000;

interface LogRow {
  /** `key_epoch`: the epoch of the latest change committed. */
  position: number;
  /** A change after the epoch asked from (null: none). */
  epoch: number | null;
  table: string | null;
  rowId: string | null;
  hash: string | null;
}

/**
 * Which rows a cached key read depends on changed since the previous call, from the change log
 * (migration 0009): the epoch of the latest change, and every change since the epoch this
 * instance saw last, in one statement, so one snapshot. Epochs follow the commit order with no
 * gap, so when fewer changes are listed than the epoch moved, the log was pruned past this
 * instance (or the database restored): then anything may have changed. The first call, too,
 * says anything may have (the caches are empty then). On SQLite, where a commit of any
 * connection and each write of this process show for the price of a pragma (`hasChanged`),
 * the log is read only when that says something changed.
 */
export function createKeyChangeCheck(database: StoreDatabase<IdentityDatabase>): ChangeCheck {
  const readLog = createPreparedRows<LogRow>(
    database,
    `SELECT e.value AS position, c.epoch, c.table_name AS "table", c.row_id AS "rowId",
      c.secret_hash AS hash
    FROM key_epoch e LEFT JOIN key_changes c ON c.epoch > ? AND c.epoch <= ? AND c.epoch <= e.value
    WHERE e.id = 1 ORDER BY c.epoch`,
  );
  let seen: number | undefined;
  return async () => {
    if (database.hasChanged && !database.hasChanged()) return false;
    const from = seen ?? -1;
    const rows = await readLog(from, seen === undefined ? from : from + MAX_LISTED_CHANGES);
    const position = rows[0]?.position;
    if (position === undefined) throw new Error("key_epoch has no row: is the schema migrated?");
    const previous = seen;
    seen = position;
    if (previous === undefined) return true;
    if (position === previous) return false;
    const changes = rows.filter((row): row is LogRow & Change => row.epoch !== null);
    return changes.length === position - previous
      ? changes.map(({ table, rowId, hash }) => ({ table, rowId, hash }))
      : true;
  };
}

/** The cached reads of a user key by its hash (mint): its row, and its account's deletion. */
export function evictUserKeyByHash(
  change: Change,
  entries: CacheEntries<{ ownerId: string }>,
): void {
  if (change.table === "user_keys" && change.hash) entries.delete(change.hash);
  if (change.table === "accounts") entries.deleteWhere((row) => row?.ownerId === change.rowId);
}

/** The cached reads of a partner key by its hash (verify). */
export function evictPartnerKeyByHash(change: Change, entries: CacheEntries<unknown>): void {
  if (change.table === "partner_keys" && change.hash) entries.delete(change.hash);
}

/** The cached reads of a token's owner by user key id (verify): the key, and its account. */
export function evictTokenOwner(
  change: Change,
  entries: CacheEntries<{ accountId: string }>,
): void {
  if (change.table === "user_keys") entries.delete(change.rowId);
  if (change.table === "accounts") entries.deleteWhere((row) => row?.accountId === change.rowId);
}

/** Whether the sealing keys must be read again (`store.onKeysChanged`). */
export function touchesSealingKeys(changes: true | readonly Change[]): boolean {
  return changes === true || changes.some((change) => change.table === "sealing_keys");
}
