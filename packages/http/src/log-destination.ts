import onExit from "on-exit-leak-free";
import pino, { type DestinationStream } from "pino";

/** A log destination that pino can also flush (`logger.flush()`, and synchronously on `fatal`). */
export interface LogDestination extends DestinationStream {
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/**
 * Where a service writes its JSON log lines (file descriptor 1 or 2): pino's destination, handed
 * the lines of each turn of the event loop together (`batchByTurn`) and writing them at once, on
 * the service's thread: one write a turn, never a hand-off to another thread, and no line held
 * in memory past its turn. So a reader that stops reading holds the service up, as pino's
 * default destination does, rather than letting lines pile up. Lines still waiting when the
 * process exits are written then.
 */
export function createLogDestination(fd: 1 | 2): LogDestination {
  const destination = batchByTurn(pino.destination({ dest: fd, sync: true }));
  onExit.register(destination, (waiting: LogDestination) => waiting.flushSync());
  return destination;
}

/**
 * `sink`, handed the lines written in one turn of the event loop (every request answered in it
 * has its access-log line) together at the turn's end, as one write: a write per line cost the
 * service more than building the lines.
 */
export function batchByTurn(sink: LogDestination): LogDestination {
  let lines: string[] = [];
  let scheduled = false;
  const handOver = (): void => {
    scheduled = false;
    if (lines.length === 0) return;
    const chunk = lines.length === 1 ? (lines[0] as string) : lines.join("");
    lines = [];
    sink.write(chunk);
  };
  return {
    write(line: string): void {
      lines.push(line);
      if (scheduled) return;
      scheduled = true;
      setImmediate(handOver);
    },
    flush(callback) {
      handOver();
      sink.flush(callback);
    },
    flushSync() {
      handOver();
      sink.flushSync();
    },
  };
}
