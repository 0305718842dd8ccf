import { READ_TIMEOUT_CODE } from "./reader-pool.ts";

// Network failures on the way to the database, and PostgreSQL's "not now" answers: class 08
// (connection exception), 57P01–57P03 (shutting down, cannot connect now), 53300 (too many
// connections), 57014 (a statement cancelled at its deadline, `statement_timeout`); and a SQLite
// read stopped at its deadline on a reader thread (`READ_TIMEOUT_CODE`, reader-pool.ts).
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH"]);
const SERVER_CODES = new Set(["57P01", "57P02", "57P03", "53300", "57014", READ_TIMEOUT_CODE]);
// node-postgres reports a dropped connection, a pool checkout past its deadline, a client's
// connect past its deadline and a query the server
// never answered by message only.
const PG_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|timeout expired$|Query read timeout)/;

/**
 * Whether `error` says the database cannot be reached right now (as opposed to a fault in the
 * query): such a request deserves 503 and a retry, not 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let depth = 0; error instanceof Error && depth < 5; depth++) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && (NETWORK_CODES.has(code) || SERVER_CODES.has(code))) {
      return true;
    }
    if (typeof code === "string" && code.startsWith("08")) return true;
    if (PG_MESSAGES.test(error.message)) return true;
    if (error instanceof AggregateError) return error.errors.some(isDatabaseUnavailable);
    error = error.cause;
  }
  return false;
}
