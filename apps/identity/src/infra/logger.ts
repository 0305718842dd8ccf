import { createLogDestination } from "@agentpass/http";
import pino, { type DestinationStream, type Logger } from "pino";

/**
 * What a log line may never show, by path: a caller's credential and the secrets an error object
 * may carry. Named paths, not wildcards: a wildcard makes the logger walk every field of every
 * line, the access log's line per request included, for fields no call site logs. So a call that
 * logs something which could hold a secret logs it under one of these names (`err` for errors).
 */
const REDACTED_PATHS = [
  "req.headers.authorization",
  "sessionToken",
  "key",
  "err.key",
  "err.sessionToken",
];

/**
 * JSON-lines logs. Secrets never reach a log line: request bodies and Authorization headers are
 * never logged, and error objects are redacted of the fields that could carry them.
 */
export function createLogger(
  level: string,
  to: "stdout" | "stderr" | DestinationStream = "stdout",
): Logger {
  return pino(
    { level, base: { service: "agentpass-identity" }, redact: REDACTED_PATHS },
    // The admin CLI logs to stderr: its stdout is the answer (a new key) that scripts read.
    typeof to === "string" ? createLogDestination(to === "stderr" ? 2 : 1) : to,
  );
}
