import {
  createRowsReader,
  type OpenedDatabase,
  type RowsReader,
  type SqlParam,
} from "@agentpass/db";
import type { CompiledQuery } from "kysely";
import type pg from "pg";
import { refusal } from "./limits.ts";
import { DEADLINE_FUNCTION } from "./search.ts";

/**
 * Reads the rows of one search statement (objects of their columns by name) within its budget;
 * past it, throws `SEARCH_TIMEOUT`.
 */
export type SearchReader = RowsReader;

/** The code a reader thread's read fails with past its deadline (`ReadOptions` of `@agentpass/db`). */
const READ_TIMEOUT_CODE = "ERR_READ_TIMEOUT";
/** PostgreSQL's query_canceled: a statement stopped at its `statement_timeout`. */
const QUERY_CANCELED = "57014";
/**
 * PostgreSQL connections searches leave to every other request: a list, a note or a write never
 * waits for a connection behind searches, however many are running.
 */
const RESERVED_CONNECTIONS = 2;

/**
 * Runs search statements with a budget of `timeoutMs` each, so that no search holds a thread or
 * a connection past it. Each engine stops a statement its own way:
 * - SQLite on reader threads: the read's deadline (`ReadOptions` of `@agentpass/db`): the
 *   statement stops itself at the first row scanned past it (`within_deadline()`, search.ts),
 *   and a thread stuck past it is given up on and replaced.
 * - SQLite on the service's own connection (`READER_THREADS=0`): the same function, on that
 *   connection; there a search holds every request until it stops.
 * - PostgreSQL: on connections of their own whose `statement_timeout` is the budget (one round
 *   trip a statement; `SET LOCAL` in a transaction of its own behind a transaction pooler);
 *   searches run at most as many at once as all but `RESERVED_CONNECTIONS` of the pool.
 */
export function createSearchReader(
  database: Pick<OpenedDatabase<unknown>, "sqlite" | "pool" | "readers" | "openBudgetedPool">,
  timeoutMs: number,
): SearchReader {
  const { sqlite, pool, readers } = database;
  if (sqlite) {
    const ownConnection = ownConnectionReader(sqlite, timeoutMs);
    return readers ? threadsReader(readers, timeoutMs) : ownConnection;
  }
  if (!pool) throw new Error("database has neither SQLite nor PostgreSQL handle");
  return postgresReader(database, timeoutMs);
}

function threadsReader(
  readers: NonNullable<OpenedDatabase<unknown>["readers"]>,
  timeoutMs: number,
): SearchReader {
  return async <Row>(query: CompiledQuery) => {
    try {
      return (await readers.all(query.sql, query.parameters as SqlParam[], {
        timeoutMs,
      })) as Row[];
    } catch (error) {
      throw (error as { code?: unknown }).code === READ_TIMEOUT_CODE
        ? refusal("SEARCH_TIMEOUT", timeoutMs, error)
        : error;
    }
  };
}

/**
 * The search statements on the service's own SQLite connection, with `within_deadline()` defined
 * on it (defined also when reader threads run the searches, so the statements prepare there
 * too). The deadline is set around each statement, which node:sqlite runs within the call. A
 * second store on the same connection defines the function again, and the first store's
 * searches then have no deadline (tests only: the service opens one store).
 */
function ownConnectionReader(
  sqlite: NonNullable<OpenedDatabase<unknown>["sqlite"]>,
  timeoutMs: number,
) {
  let deadline = Number.POSITIVE_INFINITY;
  sqlite.function(DEADLINE_FUNCTION, () => {
    if (performance.now() > deadline) throw refusal("SEARCH_TIMEOUT", timeoutMs);
    return 1;
  });
  const readRows = createRowsReader({ sqlite });
  return <Row extends object>(query: CompiledQuery): Promise<Row[]> => {
    deadline = performance.now() + timeoutMs;
    try {
      return readRows<Row>(query);
    } finally {
      deadline = Number.POSITIVE_INFINITY;
    }
  };
}

function postgresReader(
  database: Pick<OpenedDatabase<unknown>, "pool" | "openBudgetedPool">,
  timeoutMs: number,
): SearchReader {
  const pool = database.pool as pg.Pool;
  const size = Math.max(1, (pool.options.max ?? 10) - RESERVED_CONNECTIONS);
  const slots = createSlots(size, pool.options.connectionTimeoutMillis ?? 0);
  const timedOut = (error: unknown) =>
    (error as { code?: unknown }).code === QUERY_CANCELED
      ? refusal("SEARCH_TIMEOUT", timeoutMs, error)
      : error;
  // The server cancels the statement itself and keeps the connection (the pool's own
  // `query_timeout` stays the backstop for a server that does not answer at all).
  const budgeted = database.openBudgetedPool?.({ size, statementTimeoutMs: timeoutMs });
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
    if (!(await slots.take())) throw refusal("SEARCH_TIMEOUT", timeoutMs);
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
 * Gives back a connection whose search failed: rolled back and kept when the server answered
 * with an error (a statement cancelled at its budget, say), thrown away otherwise (the
 * connection dropped, or went unanswered: its state is unknown).
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
