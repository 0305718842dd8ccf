export { migrateToLatest } from "./migrate.ts";
export {
  type Engine,
  isPostgresUrl,
  type OpenDatabaseOptions,
  type OpenedDatabase,
  openDatabase,
} from "./open-database.ts";
export { createPreparedQuery, createPreparedRows } from "./prepared-query.ts";
export { createRowsReader } from "./read-rows.ts";
export type { ReaderPool, SqlParam } from "./reader-pool.ts";
export { isDatabaseUnavailable } from "./unavailable.ts";
