import { chmodSync, renameSync, rmSync } from "node:fs";
import { resolve } from "node:path";
import { backup } from "node:sqlite";
import type { OpenedDatabase } from "./open-database.ts";

/** Every page in one step of SQLite's backup (the most an int32 `rate` may say). */
const ALL_PAGES = 2 ** 31 - 1;

/**
 * A consistent copy of a running SQLite database in `file`, through SQLite's online backup API:
 * every page copied in one step, inside one read transaction, so the copy is the database as of
 * one commit (the write-ahead log's included), and the writes the service makes meanwhile neither
 * wait for it nor restart it. Written beside `file` and renamed into place, readable by its owner
 * only (it holds hashes and wrapped keys). PostgreSQL is backed up with its own tools (`pg_dump`):
 * docs/operations.md, "Backups".
 */
export async function backupDatabase(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  file: string,
): Promise<{ file: string; pages: number }> {
  const { handles } = database;
  if (handles.engine !== "sqlite") {
    throw new Error("a PostgreSQL database is backed up with pg_dump (docs/operations.md)");
  }
  const target = resolve(file);
  const partial = `${target}.partial`;
  try {
    const pages = await backup(handles.sqlite, partial, { rate: ALL_PAGES });
    chmodSync(partial, 0o600);
    renameSync(partial, target);
    return { file: target, pages };
  } finally {
    rmSync(partial, { force: true });
  }
}
