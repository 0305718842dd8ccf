import pino, { type DestinationStream } from "pino";

/** A log destination that pino can also flush (`logger.flush()`, and synchronously on `fatal`). */
export interface LogDestination extends DestinationStream {
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/**
 * Where a service writes its JSON log lines (file descriptor 1 or 2): pino's destination, each
 * line written as it is logged, on the service's thread. So no line is held in memory, none is
 * lost when the process exits, and a reader that stops reading holds the service up rather than
 * letting lines pile up. (Gathering a turn's lines into one write was measured and removed:
 * docs/decisions.md, "What exists for speed".)
 */
export function createLogDestination(fd: 1 | 2): LogDestination {
  return pino.destination({ dest: fd, sync: true });
}
