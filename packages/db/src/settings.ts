import { z } from "zod";

const POOL_SIZE_ERROR = "must be a whole number of connections from 1 to 1000";

/**
 * The database settings of every service, as zod fields over its environment: each service's
 * `config.ts` spreads them into its schema (docs/scale.md says how to choose them).
 */
export const databaseSettings = {
  /** PostgreSQL: connections one instance opens at most. */
  DATABASE_POOL_SIZE: z.coerce
    .number({ error: POOL_SIZE_ERROR })
    .int(POOL_SIZE_ERROR)
    .min(1, POOL_SIZE_ERROR)
    .max(1000, POOL_SIZE_ERROR)
    .default(10),
  /** PostgreSQL: `transaction` behind PgBouncer in transaction mode (`PoolMode`). */
  DATABASE_POOL_MODE: z
    .enum(["session", "transaction"], { error: 'must be "session" or "transaction"' })
    .default("session"),
  /**
   * Apply missing migrations at start (the default, so a fresh clone starts), or refuse to start
   * on a database that lacks any: production migrates in a deploy step of its own.
   */
  MIGRATE_ON_START: z
    .enum(["true", "false"], { error: 'must be "true" or "false"' })
    .default("true")
    .transform((value) => value === "true"),
};

/** The database settings as a service's `Config` carries them. */
export interface DatabaseSettings {
  /** PostgreSQL: the pool's size, and how the server hands out connections. */
  databasePool: { size: number; mode: "session" | "transaction" };
  /** Whether start-up applies missing migrations (else it refuses a database that lacks any). */
  migrateOnStart: boolean;
}

/** `DatabaseSettings` from the parsed `databaseSettings` fields. */
export function toDatabaseSettings(values: {
  DATABASE_POOL_SIZE: number;
  DATABASE_POOL_MODE: "session" | "transaction";
  MIGRATE_ON_START: boolean;
}): DatabaseSettings {
  return {
    databasePool: { size: values.DATABASE_POOL_SIZE, mode: values.DATABASE_POOL_MODE },
    migrateOnStart: values.MIGRATE_ON_START,
  };
}
