import type { DatabaseSync, StatementSync } from "node:sqlite";
import { type SqliteDatabase, SqliteDialect, type SqliteStatement } from "kysely";
import { inStatementSpan } from "./statement-spans.ts";

/**
 * Adapts Node's built-in `node:sqlite` to the interface Kysely's SqliteDialect expects
 * (the better-sqlite3 shape). Prepared statements are cached by SQL text: Kysely prepares
 * every query it runs, and re-preparing costs more than running an indexed lookup.
 */
export function createNodeSqliteDialect(database: DatabaseSync): SqliteDialect {
  return new SqliteDialect({ database: adaptDatabase(database) });
}

function adaptDatabase(database: DatabaseSync): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => {
      statements.clear();
      database.close();
    },
    prepare: (sql) => {
      let statement = statements.get(sql);
      if (!statement) {
        statement = adaptStatement(database.prepare(sql), sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

type SqliteValue = null | number | bigint | string | NodeJS.ArrayBufferView;

function adaptStatement(statement: StatementSync, sql: string): SqliteStatement {
  return {
    // A statement that yields columns (SELECT, or anything with RETURNING) is a reader.
    reader: statement.columns().length > 0,
    // node:sqlite yields null-prototype rows; copy them so both engines return plain objects.
    all: (parameters) =>
      inStatementSpan("sqlite", sql, () =>
        statement.all(...(parameters as SqliteValue[])).map((row) => ({ ...row })),
      ),
    run: (parameters) =>
      inStatementSpan("sqlite", sql, () => statement.run(...(parameters as SqliteValue[]))),
    iterate: (parameters) => statement.iterate(...(parameters as SqliteValue[])),
  };
}
