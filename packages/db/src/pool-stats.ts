import type { OpenedDatabase } from "./open-database.ts";

/** The connections of a PostgreSQL pool, as a metrics scrape reads them. */
export interface PoolStats {
  /** Connections open, idle or in use. */
  total: number;
  idle: number;
  /** Queries waiting for a connection: above 0 for long, the pool is too small or the database slow. */
  waiting: number;
}

/**
 * The requests' pool of a PostgreSQL database, now; null on SQLite, which has no pool. (The
 * searches' budgeted pools of the notes API are not counted.)
 */
export function readPoolStats(
  database: Pick<OpenedDatabase<unknown>, "handles">,
): PoolStats | null {
  const { handles } = database;
  if (handles.engine !== "postgres") return null;
  const { pool } = handles;
  return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
}
