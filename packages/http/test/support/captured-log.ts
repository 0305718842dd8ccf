import { Writable } from "node:stream";
import pino, { type Logger } from "pino";

/** One log line, parsed. */
export type LogLine = Record<string, unknown>;

/** A logger at `info` whose every line is kept, parsed, in `lines`, for a test to read. */
export function captureLog(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  return { logger, lines };
}
