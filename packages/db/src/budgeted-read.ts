import type { CompiledQuery } from "kysely";
import type pg from "pg";
import type { OpenedDatabase, PostgresHandles, SqliteHandles } from "./open-database.ts";
import { createRowsReader, type RowsReader } from "./read-rows.ts";
import { DEADLINE_FUNCTION, READ_TIMEOUT_CODE, readTimeoutError } from "./reader-pool.ts";

/** PostgreSQL's query_canceled: a statement stopped at its `statement_timeout`. */
const QUERY_CANCELED = "57014";
/**
 * PostgreSQL connections budgeted reads leave to every other request: a list, a note or a write
 * never waits for a connection behind them, however many are running.
 */
const RESERVED_CONNECTIONS = 2;

/** Whether `error` is a budgeted read stopped at its budget (`createBudgetedReader`). */
export function isReadTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === READ_TIMEOUT_CODE;
}

/**
 * Reads the rows of one statement within a budget of `timeoutMs`, so that no read holds a
 * thread or a connection past it; past it, the read fails with an error `isReadTimeout` knows.
 * Each engine stops a statement its own way:
 * - SQLite on reader threads: the read's deadline (`ReadOptions`): the statement stops itself at
 *   the first row it checks `within_deadline()` (`DEADLINE_FUNCTION`) on past it, and a thread
 *   stuck past it is given up on and replaced.
 * - SQLite on the service's own connection (no reader threads): the same function, defined on
 *   that connection; there a read holds every request until it stops. A second reader on the same
 *   connection defines the function again, and the first one's reads then have no deadline
 *   (tests only: a service opens one).
 * - PostgreSQL: on connections of their own whose `statement_timeout` is the budget, one round
 *   trip a statement; behind a transaction pooler, `SET LOCAL statement_timeout` in a read-only
 *   transaction of its own. At most all but `RESERVED_CONNECTIONS` of the pool's size run at
 *   once; one that waits past the pool's connection deadline for its turn is a timeout too.
 */
export function createBudgetedReader(
  database: Pick<OpenedDatabase<unknown>, "handles">,
  timeoutMs: number,
): RowsReader {
  const { handles } = database;
  if (handles.engine === "postgres") return postgresReader(handles, timeoutMs);
  if (handles.readers) {
    const { readers } = handles;
    return async <Row>(query: CompiledQuery) =>
      (await readers.all(query.sql, query.parameters as never, { timeoutMs })) as Row[];
  }
  return ownConnectionReader(handles, timeoutMs);
}

function ownConnectionReader(handles: SqliteHandles, timeoutMs: number): RowsReader {
  let deadline = Number.POSITIVE_INFINITY;
  handles.sqlite.function(DEADLINE_FUNCTION, () => {
    if (performance.now() > deadline) throw readTimeoutError(timeoutMs);
    return 1;
  });
  const readRows = createRowsReader({ handles: { ...handles, readers: undefined } });
  // The deadline is set around each statement, which node:sqlite runs within the call.
  return <Row extends object>(query: CompiledQuery): Promise<Row[]> => {
    deadline = performance.now() + timeoutMs;
    try {
      return readRows<Row>(query);
    } finally {
      deadline = Number.POSITIVE_INFINITY;
    }
  };
}

function postgresReader(handles: PostgresHandles, timeoutMs: number): RowsReader {
  const { pool } = handles;
  const size = Math.max(1, (pool.options.max ?? 10) - RESERVED_CONNECTIONS);
  const slots = createSlots(size, pool.options.connectionTimeoutMillis ?? 0);
  const timedOut = (error: unknown) =>
    (error as { code?: unknown }).code === QUERY_CANCELED
      ? Object.assign(readTimeoutError(timeoutMs), { cause: error })
      : error;
  // The server cancels the statement itself and keeps the connection (the pool's own
  // `query_timeout` stays the backstop for a server that does not answer at all).
  const budgeted = handles.openBudgetedPool({ size, statementTimeoutMs: timeoutMs });
  const run = budgeted
    ? async (query: CompiledQuery) => {
        try {
          return (await budgeted.query({ text: query.sql, values: [...query.parameters] })).rows;
        } catch (error) {
          throw timedOut(error);
        }
      }
    : (query: CompiledQuery) => inTransaction(pool, query, timeoutMs, timedOut);
  return async <Row>(query: CompiledQuery) => {
    if (!(await slots.take())) throw readTimeoutError(timeoutMs);
    try {
      return (await run(query)) as Row[];
    } finally {
      slots.give();
    }
  };
}

/**
 * Behind a transaction pooler (no setting may outlive a transaction): the statement in a
 * read-only transaction of its own, its budget set for that transaction only.
 */
async function inTransaction(
  pool: pg.Pool,
  query: CompiledQuery,
  timeoutMs: number,
  timedOut: (error: unknown) => unknown,
): Promise<unknown[]> {
  const client = await pool.connect();
  try {
    await client.query(`BEGIN READ ONLY; SET LOCAL statement_timeout = ${Math.trunc(timeoutMs)}`);
    const { rows } = await client.query({ text: query.sql, values: [...query.parameters] });
    await client.query("COMMIT");
    client.release();
    return rows;
  } catch (error) {
    await releaseAfter(client, error);
    throw timedOut(error);
  }
}

/**
 * Gives back a connection whose read failed: rolled back and kept when the server answered with
 * an error (a statement cancelled at its budget, say), thrown away otherwise (the connection
 * dropped, or went unanswered: its state is unknown).
 */
async function releaseAfter(client: pg.PoolClient, error: unknown): Promise<void> {
  if (typeof (error as { severity?: unknown }).severity !== "string") {
    client.release(error instanceof Error ? error : true);
    return;
  }
  try {
    await client.query("ROLLBACK");
    client.release();
  } catch (rollbackError) {
    client.release(rollbackError instanceof Error ? rollbackError : true);
  }
}

/**
 * `count` slots taken first come, first served; a taker waits at most `waitMs` (0: as long as it
 * takes) and is then told false.
 */
function createSlots(count: number, waitMs: number) {
  let free = count;
  const waiting: ((taken: boolean) => void)[] = [];
  return {
    take(): Promise<boolean> {
      if (free > 0) {
        free--;
        return Promise.resolve(true);
      }
      return new Promise((resolve) => {
        const timer =
          waitMs > 0
            ? setTimeout(() => {
                const index = waiting.indexOf(grant);
                if (index >= 0) waiting.splice(index, 1);
                resolve(false);
              }, waitMs)
            : undefined;
        const grant = (taken: boolean) => {
          clearTimeout(timer);
          resolve(taken);
        };
        waiting.push(grant);
      });
    },
    give() {
      const next = waiting.shift();
      if (next) next(true);
      else free++;
    },
  };
}
