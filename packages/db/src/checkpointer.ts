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

/**
 * What the thread posts after each checkpoint: the WAL's frames, and how many are copied; both
 * -1 when it could not run (another connection, the automatic checkpoint, was checkpointing).
 */
export const CHECKPOINTED = "checkpointed";
/** What the thread is sent to close its connection and end. */
export const STOP = "stop";

export interface Checkpointer {
  /** Resolves after the next checkpoint that ends from now on (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
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
  let waiting: ((result: { log: number; checkpointed: number }) => void)[] = [];
  let closing = false;
  worker.on("message", (message: { kind: string; log: number; checkpointed: number }) => {
    if (message.kind !== CHECKPOINTED) return;
    const resolved = waiting;
    waiting = [];
    for (const resolve of resolved) resolve(message);
  });
  // A thread that fails leaves the checkpoints to SQLite's automatic one, as without it.
  worker.on("error", () => {});
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  return {
    next: () => {
      if (closing) return Promise.reject(new Error("the checkpointer is closed"));
      return new Promise((resolve) => waiting.push(resolve));
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
