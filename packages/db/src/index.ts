export { migrateToLatest } from "./migrate.ts";
export {
  type Engine,
  isPostgresUrl,
  type OpenDatabaseOptions,
  type OpenedDatabase,
  openDatabase,
} from "./open-database.ts";
export { createPreparedQuery, createPreparedRows } from "./prepared-query.ts";
export { isDatabaseUnavailable } from "./unavailable.ts";
