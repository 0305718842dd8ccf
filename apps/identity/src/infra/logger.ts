import pino, { type Logger } from "pino";

/**
 * JSON-lines logs. Secrets never reach a log line: request bodies and Authorization headers are
 * never logged, and error objects are redacted of the fields that could carry them.
 */
export function createLogger(level: string, to: "stdout" | "stderr" = "stdout"): Logger {
  return pino(
    {
      level,
      base: { service: "agentpass-identity" },
      redact: ["req.headers.authorization", "sessionToken", "key", "*.key", "*.sessionToken"],
    },
    // The admin CLI logs to stderr: its stdout is the answer (a new key) that scripts read.
    // Asynchronous: lines that come while a write is under way go out together in the next one
    // (a write per request took a quarter of a verify's time); pino flushes what is left at exit.
    pino.destination({ dest: to === "stderr" ? 2 : 1, sync: false }),
  );
}
