import { createHash } from "node:crypto";
import type { StatementSync } from "node:sqlite";
import type { OpenedDatabase } from "./open-database.ts";

/**
 * A single-row read for a hot path, prepared once and run without the query builder.
 *
 * Measured on the verify path: a Kysely query over node:sqlite costs tens of microseconds of
 * compilation and promise plumbing around a ~3 µs indexed lookup, which made it the largest cost
 * of a verify. Write `sql` with `?` placeholders; PostgreSQL gets `$1, $2, …` and a named
 * (server-side prepared) statement.
 */
export function createPreparedQuery<Row>(
  database: Pick<OpenedDatabase<unknown>, "sqlite" | "pool">,
  sql: string,
): (...params: (string | number | null)[]) => Promise<Row | undefined> {
  if (database.sqlite) {
    const sqlite = database.sqlite;
    let statement: StatementSync | undefined;
    return async (...params) => {
      statement ??= sqlite.prepare(sql);
      const row = statement.get(...params);
      return row ? ({ ...row } as Row) : undefined;
    };
  }
  const pool = database.pool;
  if (!pool) throw new Error("database has neither SQLite nor PostgreSQL handle");
  let index = 0;
  const text = sql.replace(/\?/g, () => `$${++index}`);
  const name = `q_${createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
  return async (...params) => {
    const result = await pool.query({ name, text, values: params });
    return result.rows[0] as Row | undefined;
  };
}
