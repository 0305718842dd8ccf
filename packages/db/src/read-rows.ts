import type { StatementSync } from "node:sqlite";
import type { CompiledQuery } from "kysely";
import type { OpenedDatabase } from "./open-database.ts";
import type { SqlParam } from "./reader-pool.ts";

/** Statements remembered on the service's own SQLite connection; past this, cleared. */
const MAX_STATEMENTS = 100;

/**
 * A reader of compiled queries whose text varies (a list filtered by a search and a tag), giving
 * each row as an array of its columns in `SELECT` order. On SQLite a read goes to the database's
 * reader threads when it has them, and else runs on its own connection, its statement prepared
 * once per text; on PostgreSQL it is an unnamed statement on the pool.
 */
export function createRowsReader(
  database: Pick<OpenedDatabase<unknown>, "sqlite" | "pool" | "readers">,
): <Row extends unknown[]>(query: CompiledQuery) => Promise<Row[]> {
  const { sqlite, pool, readers } = database;
  if (readers) {
    return async <Row>(query: CompiledQuery) =>
      (await readers.all(query.sql, query.parameters as SqlParam[])) as Row[];
  }
  if (sqlite) {
    const statements = new Map<string, StatementSync>();
    return async <Row>(query: CompiledQuery) => {
      let statement = statements.get(query.sql);
      if (!statement) {
        if (statements.size >= MAX_STATEMENTS) statements.clear();
        statement = sqlite.prepare(query.sql);
        statement.setReturnArrays(true);
        statements.set(query.sql, statement);
      }
      return statement.all(...(query.parameters as SqlParam[])) as Row[];
    };
  }
  if (!pool) throw new Error("database has neither SQLite nor PostgreSQL handle");
  return async <Row>(query: CompiledQuery) =>
    (await pool.query({ text: query.sql, values: [...query.parameters], rowMode: "array" }))
      .rows as Row[];
}
