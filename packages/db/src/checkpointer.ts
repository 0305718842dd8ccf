import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/** What the checkpoint thread is started with. */
export interface CheckpointThreadOptions {
  file: string;
  /** How long between two checkpoints, in ms. */
  intervalMs: number;
  /** How long its connection waits for a lock another holds. */
  busyTimeoutMs: number;
}

/** What the thread posts after each checkpoint: the WAL's frames, and how many are copied. */
export const CHECKPOINTED = "checkpointed";
/** What the thread is sent to close its connection and end. */
export const STOP = "stop";

/** The frames at which SQLite's own automatic checkpoint runs (its default). */
const AUTOMATIC_CHECKPOINT_FRAMES = 1000;

export interface Checkpointer {
  /** Resolves after the next checkpoint that ends from now on (tests). */
  next(): Promise<{ log: number; checkpointed: number }>;
  /** Ends the thread, once its connection is closed; SQLite's automatic checkpoint is back on. */
  close(): Promise<void>;
}

/**
 * Checkpoints of a SQLite database in WAL mode on a thread of its own, so that no request waits
 * for one. SQLite's automatic checkpoint runs inside the commit that takes the WAL past 1,000
 * pages: that commit copies the pages into the database file and waits for both files to reach
 * the disk, on the service's one thread, and every request behind it waits too. Here the
 * service's connection `sqlite` never checkpoints (`wal_autocheckpoint = 0`); a thread with its
 * own connection runs a passive checkpoint every `intervalMs`, which blocks no writer and no
 * reader: it copies what no reader still needs, and a writer starts the WAL over once all of it
 * is copied. Should the thread stop, the connection's automatic checkpoint is turned back on, so
 * the WAL never grows without end.
 */
export function startCheckpointer(
  sqlite: DatabaseSync,
  options: CheckpointThreadOptions,
): Checkpointer {
  sqlite.exec("PRAGMA wal_autocheckpoint = 0");
  const automatic = () => sqlite.exec(`PRAGMA wal_autocheckpoint = ${AUTOMATIC_CHECKPOINT_FRAMES}`);
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
  // A thread that fails, or ends without being asked, leaves the checkpoints to SQLite again.
  worker.on("error", () => {});
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      if (sqlite.isOpen) automatic();
      resolve();
    }),
  );
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
