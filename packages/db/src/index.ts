export { backupDatabase } from "./backup.ts";
export { createBudgetedReader, isReadTimeout } from "./budgeted-read.ts";
export {
  type CacheEntries,
  type CacheLookups,
  type Change,
  type ChangeCheck,
  createReadCaches,
  type FoundChanges,
  type HotRead,
  shareChecks,
} from "./cached-read.ts";
export { DEFAULT_DATA_DIR, ensureDataDir } from "./data-dir.ts";
export { type MigrationReport, migrateToLatest, readMigrations } from "./migrate.ts";
export {
  type Engine,
  type EngineHandles,
  isPostgresUrl,
  type OpenDatabaseOptions,
  type OpenedDatabase,
  openDatabase,
  type PoolMode,
  type PostgresHandles,
  type ReadOnlyDb,
  type SqliteHandles,
  type Write,
  type WriteTransaction,
} from "./open-database.ts";
export { type PoolStats, readPoolStats } from "./pool-stats.ts";
export { isSchemaBehind, type PrepareSchemaOptions, prepareSchema } from "./prepare-schema.ts";
export {
  createPreparedQuery,
  createPreparedRows,
  createPreparedWrite,
  type PreparedParam,
  type PreparedQuery,
  type PreparedRows,
  type ReadSql,
  type WriteSql,
} from "./prepared-query.ts";
export { createRowsReader, type RowsReader } from "./read-rows.ts";
export {
  DEADLINE_FUNCTION,
  type ReaderPool,
  type ReaderRow,
  type SqlParam,
} from "./reader-pool.ts";
export { type DatabaseSettings, databaseSettings, toDatabaseSettings } from "./settings.ts";
export type { StoreDatabase } from "./store-database.ts";
export { isDatabaseUnavailable } from "./unavailable.ts";
