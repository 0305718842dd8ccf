import type { DatabaseSync, StatementSync } from "node:sqlite";

/**
 * This process's writes, counted by `write` (open-database.ts) when each starts and again when
 * it ends, so a check made while a write runs sees a change, and so does the check after it.
 */
interface LocalWrites {
  readonly count: number;
}

/**
 * For SQLite: tells whether the database may have changed since the last call — a commit by
 * any other connection or process (`PRAGMA data_version`) or a write by this one (`local`). It
 * lets a process cache reads and still see a revocation made by another process on the very
 * next request. One statement a call.
 */
export function createSqliteChangeDetector(sqlite: DatabaseSync, local: LocalWrites) {
  let statement: StatementSync | undefined;
  let seenVersion = -1;
  let seenLocal = -1;
  return (): boolean => {
    if (!statement) {
      statement = sqlite.prepare("PRAGMA data_version");
      // Its one column as an array: the cheapest way node:sqlite reads a row.
      statement.setReturnArrays(true);
    }
    const [version] = statement.get() as unknown as [number];
    if (version === seenVersion && local.count === seenLocal) return false;
    seenVersion = version;
    seenLocal = local.count;
    return true;
  };
}
