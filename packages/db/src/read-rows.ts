import type { CompiledQuery } from "kysely";
import type { OpenedDatabase } from "./open-database.ts";
import type { SqlParam } from "./reader-pool.ts";
import { prepareRowObjects } from "./sqlite-rows.ts";
import { inStatementSpan } from "./statement-spans.ts";

/** Statements remembered on the service's own SQLite connection; past this, cleared. */
const MAX_STATEMENTS = 100;

/** Reads the rows of a compiled query, each an object of its columns by name. */
export type RowsReader = <Row extends object>(query: CompiledQuery) => Promise<Row[]>;

/**
 * A reader of compiled queries whose text varies (a list filtered by a search and a tag). Reads
 * only: on SQLite a read goes to the database's reader threads, whose connections are read-only,
 * when it has them, and else runs on its own connection, its statement prepared once per text;
 * on PostgreSQL it is an unnamed statement on the pool.
 */
export function createRowsReader(database: Pick<OpenedDatabase<unknown>, "handles">): RowsReader {
  const { handles } = database;
  if (handles.engine === "postgres") {
    const { pool } = handles;
    return async <Row>(query: CompiledQuery) =>
      (
        await inStatementSpan("postgresql", query.sql, () =>
          pool.query({ text: query.sql, values: [...query.parameters] }),
        )
      ).rows as Row[];
  }
  const { sqlite, readers } = handles;
  if (readers) {
    return async <Row>(query: CompiledQuery) =>
      (await readers.all(query.sql, query.parameters as SqlParam[])) as Row[];
  }
  const statements = new Map<string, ReturnType<typeof prepareRowObjects>>();
  return async <Row>(query: CompiledQuery) => {
    let statement = statements.get(query.sql);
    if (!statement) {
      if (statements.size >= MAX_STATEMENTS) statements.clear();
      statement = prepareRowObjects(sqlite, query.sql);
      statements.set(query.sql, statement);
    }
    return statement.all(query.parameters as SqlParam[]) as Row[];
  };
}
