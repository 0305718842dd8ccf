import { createHash } from "node:crypto";
import type { OpenedDatabase } from "./open-database.ts";
import { prepareRowObjects } from "./sqlite-rows.ts";
import { inStatementSpan } from "./statement-spans.ts";

/** A value a prepared read binds. */
export type PreparedParam = string | number | null;

/**
 * The SQL of a prepared statement: a `SELECT`, which reads only. Prepared statements are for
 * reads; every write goes through `OpenedDatabase.write`, which counts it.
 */
export type ReadSql = `SELECT ${string}`;

/**
 * The SQL of a prepared write (`createPreparedWrite`): one statement, which commits on its own.
 */
export type WriteSql = `INSERT ${string}` | `UPDATE ${string}` | `DELETE ${string}`;

/** A prepared single-row read (`createPreparedQuery`): the row, or undefined. */
export type PreparedQuery<Row> = (...params: PreparedParam[]) => Promise<Row | undefined>;

/**
 * A prepared read of many rows (`createPreparedRows`), each an object of its columns by name,
 * read-only: to be mapped rather than handed out.
 */
export type PreparedRows<Row> = (...params: PreparedParam[]) => Promise<readonly Readonly<Row>[]>;

/**
 * A single-row read for a hot path, prepared once and run without the query builder, whose
 * compilation and promise plumbing cost more than an indexed lookup. Write `sql` with `?`
 * placeholders; PostgreSQL gets `$1, $2, …` and a named (server-side prepared) statement on the
 * pool, prepared once on each connection. Behind a transaction pooler (`poolMode: "transaction"`), where a statement prepared in
 * one server session is unknown to the next, it goes to the pool and is parsed afresh each time.
 */
export function createPreparedQuery<Row>(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  sql: ReadSql,
): PreparedQuery<Row> {
  const rows = createReadStatement<Row>(database, sql, true);
  return async (...params) => (await rows(...params))[0] as Row | undefined;
}

/** Like `createPreparedQuery`, for a read of many rows (a page of a list). */
export function createPreparedRows<Row>(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  sql: ReadSql,
): PreparedRows<Row> {
  return createReadStatement<Row>(database, sql, false);
}

/**
 * A write for a hot path (a counter's upsert), prepared once and run without the query builder
 * where a prepared read runs (`createPreparedQuery`), always through `OpenedDatabase.write`, so
 * it is counted as every write is. Its rows are those its `RETURNING` clause names.
 */
export function createPreparedWrite<Row>(
  database: Pick<OpenedDatabase<unknown>, "handles"> & {
    /** `OpenedDatabase.write`, of a database of any schema. */
    write: <R>(work: () => Promise<R>) => Promise<R>;
  },
  sql: WriteSql,
): PreparedRows<Row> {
  if (!/^(INSERT|UPDATE|DELETE)\s/i.test(sql)) {
    throw new TypeError(`a prepared write is one INSERT, UPDATE or DELETE: ${sql}`);
  }
  const run = createStatement<Row>(database, sql, false);
  return (...params) => database.write(() => run(...params));
}

/**
 * `sql` prepared on first use. Refused unless it is a `SELECT` (`ReadSql`), so that no caller
 * typing its text as a plain string can slip a write past the count of writes. `first` reads
 * the first row only.
 */
function createReadStatement<Row>(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  sql: string,
  first: boolean,
): PreparedRows<Row> {
  if (!/^SELECT\s/i.test(sql)) throw new TypeError(`a prepared statement only reads: ${sql}`);
  return createStatement<Row>(database, sql, first);
}

/** `sql` prepared on first use, on SQLite's connection or on each of PostgreSQL's. */
function createStatement<Row>(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  sql: string,
  first: boolean,
): PreparedRows<Row> {
  const { handles } = database;
  if (handles.engine === "sqlite") {
    const { sqlite } = handles;
    let statement: ReturnType<typeof prepareRowObjects> | undefined;
    return async (...params) =>
      inStatementSpan("sqlite", sql, () => {
        statement ??= prepareRowObjects(sqlite, sql);
        if (!first) return statement.all(params) as Row[];
        const row = statement.get(params);
        return row ? [row as Row] : [];
      });
  }
  const { pool } = handles;
  let index = 0;
  const text = sql.replace(/\?/g, () => `$${++index}`);
  if (handles.poolMode === "transaction") {
    return async (...params) =>
      (await inStatementSpan("postgresql", text, () => pool.query({ text, values: params })))
        .rows as Row[];
  }
  const name = `q_${createHash("sha256").update(text).digest("hex").slice(0, 16)}`;
  return async (...params) =>
    (await inStatementSpan("postgresql", text, () => pool.query({ name, text, values: params })))
      .rows as Row[];
}
