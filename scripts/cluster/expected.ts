/** What the cluster must answer, as the README lists it, and how long it may take. */

export const UNAVAILABLE = { status: 503, error: "Service unavailable", code: "unavailable" };
export const TOKEN_REFUSED = {
  status: 401,
  error: "Invalid or expired session token",
  code: "session_token_invalid",
};
export const PARTNER_KEY_REVOKED = {
  status: 403,
  error: "Partner key has been revoked",
  code: "partner_key_revoked",
};
export const USER_KEY_REVOKED = {
  status: 403,
  error: "User key has been revoked",
  code: "user_key_revoked",
};
export const RATE_LIMITED = { status: 429, error: "Too many requests", code: "rate_limited" };

/** A database that does not answer is given 2 s, then 0.5 s of backstop (README, @agentpass/db). */
const DATABASE_DEADLINE_MS = 2500;
/**
 * The longest a verify or mint may wait on a hung database: one deadline. A request that arrives
 * while a key change check hangs fails with that check (packages/db/src/cached-read.ts) rather
 * than wait for a second one; past this bound it would be waiting on the stall.
 */
export const STALLED_DATABASE_BOUND_MS = DATABASE_DEADLINE_MS;
/** A Redis command is given 1 s before its hit is counted in memory (infra/rate-limit.ts). */
export const REDIS_DEADLINE_MS = 1000;
/** What 2 cores shared with other suites may add to a deadline before an answer leaves. */
export const SLACK_MS = 1000;
