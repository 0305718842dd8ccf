/**
 * One thread of a `ReaderPool`: its own read-only connection to the SQLite file, running the
 * reads it is sent and posting back their rows, each an object of its columns by name.
 */
import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import {
  DEADLINE_FUNCTION,
  READY,
  type ReaderJob,
  type ReaderReply,
  type ReaderRow,
  type ReaderThreadOptions,
  readTimeoutError,
} from "./reader-pool.ts";
import { prepareRowObjects } from "./sqlite-rows.ts";

/** Statements remembered per thread; past this many the memory is cleared and starts again. */
const MAX_STATEMENTS = 100;

const options = workerData as ReaderThreadOptions;

const sqlite = new DatabaseSync(options.file, { readOnly: true, timeout: options.timeoutMs });
if (options.cacheMb) sqlite.exec(`PRAGMA cache_size = -${Math.trunc(options.cacheMb * 1024)}`);
const statements = new Map<string, ReturnType<typeof prepareRowObjects>>();

/** The deadline of the read running now (`performance.now()` time); none between reads. */
let deadline = Number.POSITIVE_INFINITY;
let budgetMs = 0;
// node:sqlite has no interrupt: a statement that calls this on each row it scans stops itself
// at the first row past its deadline (`ReadOptions`).
sqlite.function(DEADLINE_FUNCTION, () => {
  if (performance.now() > deadline) throw readTimeoutError(budgetMs);
  return 1;
});

function statementOf(sql: string) {
  let statement = statements.get(sql);
  if (!statement) {
    if (statements.size >= MAX_STATEMENTS) statements.clear();
    statement = prepareRowObjects(sqlite, sql);
    statements.set(sql, statement);
  }
  return statement;
}

parentPort?.on("message", ({ id, sql, params, timeoutMs }: ReaderJob) => {
  let reply: ReaderReply;
  budgetMs = timeoutMs ?? 0;
  deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + timeoutMs;
  try {
    reply = { id, rows: statementOf(sql).all(params) as ReaderRow[] };
  } catch (caught) {
    const error = caught as Error & { code?: string; errcode?: number; errstr?: string };
    reply = {
      id,
      error: {
        message: error.message,
        code: error.code,
        errcode: error.errcode,
        errstr: error.errstr,
      },
    };
  } finally {
    deadline = Number.POSITIVE_INFINITY;
  }
  parentPort?.postMessage(reply);
});
parentPort?.postMessage(READY satisfies ReaderReply);
