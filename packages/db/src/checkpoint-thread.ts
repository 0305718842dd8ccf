/**
 * The thread of a `Checkpointer`: its own connection to the SQLite file, running passive
 * checkpoints until it is told to stop, then closing its connection: the next one `busyMs` after
 * a checkpoint that copied frames, `idleMs` after one that found none to copy.
 */
import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import {
  CHECKPOINTED,
  type CheckpointReport,
  type CheckpointThreadOptions,
  STOP,
  wallClock,
} from "./checkpointer.ts";

const options = workerData as CheckpointThreadOptions;
const sqlite = new DatabaseSync(options.file, { timeout: options.busyTimeoutMs });
// PASSIVE: copies what no reader still needs, and waits for no writer and no reader.
const checkpoint = sqlite.prepare("PRAGMA wal_checkpoint(PASSIVE)");

let timer: NodeJS.Timeout | undefined;
let copiedBefore = -1;
function run() {
  const startedAt = wallClock();
  const { log, checkpointed } = checkpoint.get() as { log: number; checkpointed: number };
  parentPort?.postMessage({
    kind: CHECKPOINTED,
    log,
    checkpointed,
    startedAt,
  } satisfies CheckpointReport);
  const copied = checkpointed !== copiedBefore;
  copiedBefore = checkpointed;
  timer = setTimeout(run, copied ? options.busyMs : options.idleMs);
}
run();

parentPort?.on("message", (message: unknown) => {
  if (message !== STOP) return;
  clearTimeout(timer);
  sqlite.close();
  parentPort?.close();
});
