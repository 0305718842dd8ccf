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
}

/** A thread's answer to a `ReaderJob`. */
export type ReaderReply =
  | { id: number; rows: unknown[][]; error?: undefined }
  | { id: number; error: { message: string; code?: string; errcode?: number; errstr?: string } };

export interface ReaderPool {
  /** The rows of `sql`, as arrays of their columns, read on one of the pool's threads. */
  all(sql: string, params: readonly SqlParam[]): Promise<unknown[][]>;
  /** Stops every thread; reads still running are refused. */
  close(): Promise<void>;
}

interface Job extends ReaderJob {
  resolve(rows: unknown[][]): void;
  reject(error: Error): void;
}

interface Reader {
  worker: Worker;
  running: Map<number, Job>;
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
 * not keep the process alive.
 */
export function createReaderPool(options: ReaderThreadOptions & { threads: number }): ReaderPool {
  const { threads, ...threadOptions } = options;
  const readers: Reader[] = [];
  const queue: Job[] = [];
  let nextId = 0;
  let closed = false;

  function start(): Reader {
    const worker = new Worker(new URL("./reader-thread.ts", import.meta.url), {
      workerData: threadOptions,
    });
    const reader: Reader = { worker, running: new Map() };
    worker.on("message", (reply: ReaderReply) => {
      const job = reader.running.get(reply.id);
      reader.running.delete(reply.id);
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
      for (const job of reader.running.values()) job.reject(error);
      reader.running.clear();
      dispatch();
    };
    worker.on("error", stop);
    worker.on("exit", (code) => stop(new Error(`a reader thread stopped (exit code ${code})`)));
    readers.push(reader);
    return reader;
  }

  /** The thread to give the next read to, started if need be; undefined when all are full. */
  function leastBusy(): Reader | undefined {
    let best: Reader | undefined;
    for (const reader of readers) {
      if (!best || reader.running.size < best.running.size) best = reader;
    }
    if (best?.running.size === 0 || readers.length >= threads) {
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
      reader.worker.postMessage({
        id: job.id,
        sql: job.sql,
        params: job.params,
      } satisfies ReaderJob);
    }
  }

  return {
    all(sql, params) {
      if (closed) return Promise.reject(new Error("the database is closed"));
      return new Promise((resolve, reject) => {
        queue.push({ id: nextId++, sql, params, resolve, reject });
        dispatch();
      });
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error("the database is closed"));
      await Promise.all(readers.map((reader) => reader.worker.terminate()));
    },
  };
}
