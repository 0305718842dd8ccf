export { migrateToLatest } from "./migrate.ts";
export {
  type Engine,
  isPostgresUrl,
  type OpenDatabaseOptions,
  type OpenedDatabase,
  openDatabase,
  type ReadOnlyDb,
  type Write,
  type WriteTransaction,
} from "./open-database.ts";
export {
  createPreparedQuery,
  createPreparedRows,
  type PreparedParam,
  type PreparedQuery,
  type PreparedRows,
  type ReadSql,
} from "./prepared-query.ts";
export { createRowsReader, type RowsReader } from "./read-rows.ts";
export type { ReaderPool, ReaderRow, SqlParam } from "./reader-pool.ts";
export { isDatabaseUnavailable } from "./unavailable.ts";
