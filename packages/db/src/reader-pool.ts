import { Worker } from "node:worker_threads";

/** A value a read binds: what node:sqlite and structured cloning both carry as is. */
export type SqlParam = string | number | bigint | null | Uint8Array;

/** What a reader thread is started with. */
export interface ReaderThreadOptions {
  file: string;
  cacheMb: number | undefined;
  timeoutMs: number;
}

/** A read sent to a thread. */
export interface ReaderJob {
  id: number;
  sql: string;
  params: readonly SqlParam[];
  /** How long the statement may run once the thread starts it (`ReadOptions`). */
  timeoutMs?: number | undefined;
}

/** A row a thread reads: its columns by name. */
export type ReaderRow = Record<string, unknown>;

/** A thread's answer to a `ReaderJob`; first, once its connection is open, `READY`. */
export type ReaderReply =
  | typeof READY
  | { id: number; rows: ReaderRow[]; error?: undefined }
  | { id: number; error: { message: string; code?: string; errcode?: number; errstr?: string } };

/** What a thread posts once it has opened its connection and takes reads. */
export const READY = "ready";

/** What a read may ask of the pool. */
interface ReadOptions {
  /**
   * How long the read's statement may run, in ms, from when its thread starts it (time waiting
   * for a thread does not count). Past it the read fails with the code `READ_TIMEOUT_CODE`.
   * node:sqlite cannot interrupt a statement, so it is stopped two ways:
   * - from inside: the SQL function `within_deadline()` (`DEADLINE_FUNCTION`) fails the
   *   statement once its deadline has passed, so a statement that calls it on every row it
   *   scans stops at the first row past it, and its thread goes on serving;
   * - from outside: a read still running `GIVE_UP_AFTER_MS` past its deadline (one that does
   *   not call the function, or is stuck inside one row) is failed there, the reads waiting on
   *   its thread go back to the head of the queue, and a fresh thread takes its place. The
   *   thread given up on is terminated, which takes effect only when its statement ends or
   *   next calls into JavaScript: until then it keeps its core, and the process cannot exit.
   */
  timeoutMs?: number | undefined;
}

export interface ReaderPool {
  /** The rows of `sql`, each an object of its columns by name, read on one of the pool's threads. */
  all(sql: string, params: readonly SqlParam[], options?: ReadOptions): Promise<ReaderRow[]>;
  /** Stops every thread; reads still running are refused. */
  close(): Promise<void>;
}

/** The `code` of the error a read fails with past its deadline (`ReadOptions`). */
export const READ_TIMEOUT_CODE = "ERR_READ_TIMEOUT";
/**
 * The SQL function every reader connection has: 1 while the read running on it is within its
 * deadline (always, for a read without one); past it, it fails the statement with
 * `READ_TIMEOUT_CODE`.
 */
export const DEADLINE_FUNCTION = "within_deadline";
/**
 * How long a read may run past its deadline before its thread is given up on: long enough for a
 * statement checking `within_deadline()` on every row to reach its next row and stop itself,
 * keeping its thread and that thread's page cache.
 */
const GIVE_UP_AFTER_MS = 100;

/** The error of a read stopped at its deadline of `timeoutMs`. */
export function readTimeoutError(timeoutMs: number): Error {
  return Object.assign(new Error(`the read ran past its deadline (${timeoutMs} ms)`), {
    code: READ_TIMEOUT_CODE,
  });
}

interface Job extends ReaderJob {
  resolve(rows: ReaderRow[]): void;
  reject(error: Error): void;
}

interface Reader {
  worker: Worker;
  /** Whether the thread has opened its connection: its reads' deadlines run from then on. */
  ready: boolean;
  /** The reads posted to the thread, in the order it runs them: the first is running. */
  running: Map<number, Job>;
  /** Gives up on the thread if the running read, which has a deadline, goes past it. */
  watchdog: NodeJS.Timeout | undefined;
}

/**
 * Reads a thread holds at once: the one it runs and the next, so it never waits for the service's
 * thread between two. The rest wait in one queue, first come first served: a thread that falls
 * behind (descheduled, say) holds up no more than its own two.
 */
const READS_PER_THREAD = 2;

/**
 * Up to `threads` worker threads, each with its own read-only connection to one SQLite file, for
 * the reads that take milliseconds (a search over thousands of matches). node:sqlite runs a
 * statement on the calling thread, so on the service's own thread one such read holds up every
 * request behind it, while the machine's other cores wait. In WAL mode each read sees every
 * transaction committed before it starts, as a read on the service's own connection would.
 *
 * Threads start on demand: a new one only when every running one is busy. An idle thread does
 * not keep the process alive. A read may have a deadline (`ReadOptions`). Threads given up on at
 * their reads' deadlines may still be finishing a statement: fresh threads take their places
 * while at most `threads` of them are, so there are never more than twice `threads` threads
 * reading, and past that the reads wait for one of them to end.
 */
export function createReaderPool(options: ReaderThreadOptions & { threads: number }): ReaderPool {
  const { threads, ...threadOptions } = options;
  const readers: Reader[] = [];
  const queue: Job[] = [];
  /** Threads given up on that have not exited yet. */
  let stopping = 0;
  let nextId = 0;
  let closed = false;

  function start(): Reader {
    const worker = new Worker(new URL("./reader-thread.ts", import.meta.url), {
      workerData: threadOptions,
    });
    const reader: Reader = { worker, ready: false, running: new Map(), watchdog: undefined };
    worker.on("message", (reply: ReaderReply) => {
      if (reply === READY) {
        reader.ready = true;
        watch(reader);
        return;
      }
      const job = reader.running.get(reply.id);
      reader.running.delete(reply.id);
      watch(reader);
      dispatch();
      if (reader.running.size === 0) worker.unref();
      if (reply.error) job?.reject(Object.assign(new Error(reply.error.message), reply.error));
      else job?.resolve(reply.rows);
    });
    // A thread that fails (its file cannot be opened, it runs out of memory) fails only the
    // reads it holds; the reads still queued go to the others, or to a new one.
    const stop = (error: Error) => {
      const index = readers.indexOf(reader);
      if (index < 0) return;
      readers.splice(index, 1);
      clearTimeout(reader.watchdog);
      for (const job of reader.running.values()) job.reject(error);
      reader.running.clear();
      dispatch();
    };
    worker.on("error", stop);
    worker.on("exit", (code) => stop(new Error(`a reader thread stopped (exit code ${code})`)));
    readers.push(reader);
    return reader;
  }

  /**
   * Arms the watchdog of the read `reader` runs now, if it has a deadline (once the thread is
   * ready: starting one, which loads its code and opens its connection, is no read's time).
   */
  function watch(reader: Reader) {
    clearTimeout(reader.watchdog);
    reader.watchdog = undefined;
    const [running] = reader.running.values();
    if (!reader.ready || running?.timeoutMs === undefined) return;
    reader.watchdog = setTimeout(() => giveUp(reader), running.timeoutMs + GIVE_UP_AFTER_MS);
    reader.watchdog.unref();
  }

  /**
   * Fails the read `reader` runs past its deadline, puts the reads waiting on that thread back
   * at the head of the queue, in their order, and lets a fresh thread take its place.
   */
  function giveUp(reader: Reader) {
    const index = readers.indexOf(reader);
    if (closed || index < 0) return;
    readers.splice(index, 1);
    const [late, ...waiting] = reader.running.values();
    reader.running.clear();
    queue.unshift(...waiting);
    stopping++;
    reader.worker.once("exit", () => {
      stopping--;
      dispatch();
    });
    reader.worker.unref();
    reader.worker.terminate().catch(() => {});
    late?.reject(readTimeoutError(late.timeoutMs ?? 0));
    dispatch();
  }

  /** The thread to give the next read to, started if need be; undefined when all are full. */
  function leastBusy(): Reader | undefined {
    let best: Reader | undefined;
    for (const reader of readers) {
      if (!best || reader.running.size < best.running.size) best = reader;
    }
    if (best?.running.size === 0 || readers.length >= threads || stopping > threads) {
      return best && best.running.size < READS_PER_THREAD ? best : undefined;
    }
    return start();
  }

  function dispatch() {
    while (!closed && queue.length > 0) {
      const reader = leastBusy();
      if (!reader) return;
      const job = queue.shift() as Job;
      if (reader.running.size === 0) reader.worker.ref();
      reader.running.set(job.id, job);
      if (reader.running.size === 1) watch(reader);
      reader.worker.postMessage({
        id: job.id,
        sql: job.sql,
        params: job.params,
        timeoutMs: job.timeoutMs,
      } satisfies ReaderJob);
    }
  }

  return {
    all(sql, params, readOptions = {}) {
      if (closed) return Promise.reject(new Error("the database is closed"));
      const { timeoutMs } = readOptions;
      return new Promise((resolve, reject) => {
        queue.push({ id: nextId++, sql, params, timeoutMs, resolve, reject });
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error("the database is closed"));
      for (const reader of readers) clearTimeout(reader.watchdog);
      await Promise.all(readers.map((reader) => reader.worker.terminate()));
    },
  };
}
