/**
 * The thread of a `Checkpointer`: its own connection to the SQLite file, running a passive
 * checkpoint every `intervalMs` until it is told to stop, then closing its connection.
 */
import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";
import { CHECKPOINTED, type CheckpointThreadOptions, STOP } from "./checkpointer.ts";

const options = workerData as CheckpointThreadOptions;
const sqlite = new DatabaseSync(options.file, { timeout: options.busyTimeoutMs });
// PASSIVE: copies what no reader still needs, and waits for no writer and no reader.
const checkpoint = sqlite.prepare("PRAGMA wal_checkpoint(PASSIVE)");

let timer: NodeJS.Timeout | undefined;
function run() {
  const { log, checkpointed } = checkpoint.get() as { log: number; checkpointed: number };
  parentPort?.postMessage({ kind: CHECKPOINTED, log, checkpointed });
  timer = setTimeout(run, options.intervalMs);
}
run();

parentPort?.on("message", (message: unknown) => {
  if (message !== STOP) return;
  clearTimeout(timer);
  sqlite.close();
  parentPort?.close();
});
