import { Worker } from "node:worker_threads";

/** What the checkpoint thread is started with. */
export interface CheckpointThreadOptions {
  file: string;
  /** How long after a checkpoint that copied frames the next one runs, in ms. */
  busyMs: number;
  /** How long after a checkpoint that found nothing to copy the next one runs, in ms. */
  idleMs: number;
  /** How long its connection waits for a lock another holds. */
  busyTimeoutMs: number;
}

/** The kind of what the thread posts after each checkpoint (`CheckpointReport`). */
export const CHECKPOINTED = "checkpointed";

/** What one checkpoint found. */
export interface CheckpointResult {
  /** The WAL's frames; -1 when it could not run (the automatic checkpoint was running). */
  log: number;
  /** How many of them are copied into the database file; -1 when it could not run. */
  checkpointed: number;
}

/** What the thread posts after each checkpoint. */
export interface CheckpointReport extends CheckpointResult {
  kind: typeof CHECKPOINTED;
  /** When the checkpoint started (`wallClock`). */
  startedAt: number;
}

/** Milliseconds since the epoch, below the millisecond, comparable between threads. */
export function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

/** What the thread is sent to close its connection and end. */
export const STOP = "stop";

export interface Checkpointer {
  /**
   * What the first checkpoint that starts from now on finds (tests): everything committed before
   * the call is in the WAL it looks at. Reports of checkpoints that started before the call, still
   * on their way from the thread, are passed over.
   */
  next(): Promise<CheckpointResult>;
  /** Ends the thread, once its connection is closed. */
  close(): Promise<void>;
}

/**
 * Checkpoints of a SQLite database in WAL mode, copied ahead on a thread of its own so that the
 * service's thread seldom waits for one. SQLite's automatic checkpoint runs inside the commit
 * that takes the WAL to 1,000 pages: that commit copies every page the WAL holds into the
 * database file and waits for both files to reach the disk, on the service's one thread, with
 * every request behind it. A thread with its own connection runs passive checkpoints one after
 * another while there are frames to copy (they block no writer and no reader), so when the
 * automatic checkpoint comes, nearly all is copied and on the disk already: it copies the last
 * few pages, and the next write starts the WAL over. The automatic checkpoint stays on: it is
 * what keeps the WAL bounded (a passive checkpoint alone never catches up with a writer that
 * never stops, and a WAL starts over only once all of it is copied), with or without the thread.
 */
export function startCheckpointer(options: CheckpointThreadOptions): Checkpointer {
  const worker = new Worker(new URL("./checkpoint-thread.ts", import.meta.url), {
    workerData: options,
  });
  // The thread never keeps the process alive.
  worker.unref();
  let waiting: { since: number; resolve: (result: CheckpointResult) => void }[] = [];
  let closing = false;
  worker.on("message", (report: CheckpointReport) => {
    if (report.kind !== CHECKPOINTED) return;
    const { log, checkpointed } = report;
    const answered = waiting.filter((waiter) => report.startedAt > waiter.since);
    waiting = waiting.filter((waiter) => report.startedAt <= waiter.since);
    for (const waiter of answered) waiter.resolve({ log, checkpointed });
  });
  // A thread that fails leaves the checkpoints to SQLite's automatic one, as without it.
  worker.on("error", () => {});
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    next: () => {
      if (closing) return Promise.reject(new Error("the checkpointer is closed"));
      const since = wallClock();
      return new Promise((resolve) => waiting.push({ since, resolve }));
    },
    async close() {
      closing = true;
      // Held until it has ended: an unreferenced thread would let the process exit mid-close.
      worker.ref();
      worker.postMessage(STOP);
      await exited;
    },
  };
}
