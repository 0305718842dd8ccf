import { CliError, EXIT } from "./exit-codes.ts";
import {
  CLIENT_ID,
  postToService,
  reasonOf,
  retryWait,
  type ServiceAnswer,
} from "./service-request.ts";
import { printable } from "./terminal-text.ts";

export interface MintedToken {
  sessionToken: string;
  expiresAt: string;
}

/**
 * Whom a token is for: any partner (`null`), one partner by id (`audience`), or the
 * partner registered for a resource URL (RFC 8707).
 */
export type TokenTarget = null | { audience: string } | { resource: string };

const USER_KEY = /^apu_[0-9A-Za-z]{38}$/;

/** Whether `key` has the shape of a user key. The server checks the rest. */
export function looksLikeUserKey(key: string): boolean {
  return USER_KEY.test(key);
}

/**
 * Trades the user key for a session token: with the OAuth refresh grant (the user key is the
 * refresh token), or with `POST /api/session-tokens` for an audience. Failures become
 * CliErrors, one exit code per kind.
 *
 * @example
 * const minted = await mintSessionToken("http://localhost:4000", key, null, Date.now);
 * // minted.sessionToken: "aps_…", for the x-session-token header
 */
export async function mintSessionToken(
  url: string,
  userKey: string,
  target: TokenTarget,
  now: () => number,
): Promise<MintedToken> {
  if (target && "audience" in target) {
    return mintForAudience(url, userKey, target.audience);
  }
  const answer = await postToService(url, "/oauth/token", {
    form: {
      grant_type: "refresh_token",
      refresh_token: userKey,
      client_id: CLIENT_ID,
      ...(target && { resource: target.resource }),
    },
  });
  if (!answer) throw unreachable(url);
  const minted = sessionTokenOf(answer, now);
  if (minted) return minted;
  const reason = reasonOf(answer);
  if (answer.body.error === "invalid_grant") throw keyRejected(reason);
  if (answer.body.error === "invalid_target" && target) {
    throw new CliError(
      EXIT.ERROR,
      `No partner is registered for the resource ${printable(target.resource, 200)} (${reason})`,
    );
  }
  if (answer.status === 429) throw tooMany(answer);
  throw new CliError(EXIT.ERROR, `AgentPass could not mint a token: ${reason}`);
}

/**
 * The session token of an OAuth token answer (RFC 6749 section 5.1), expiring `expires_in`
 * seconds from now; null when the answer is not one.
 */
export function sessionTokenOf(answer: ServiceAnswer, now: () => number): MintedToken | null {
  const { access_token: token, expires_in: expiresIn } = answer.body;
  if (answer.status !== 200 || typeof token !== "string") return null;
  // Without a usable lifetime the token is cached as already stale: the next call mints anew.
  const seconds = typeof expiresIn === "number" && expiresIn > 0 ? expiresIn : 0;
  return { sessionToken: token, expiresAt: new Date(now() + seconds * 1000).toISOString() };
}

/** `POST /api/session-tokens` with `{ audience }`: a token only that partner can verify. */
async function mintForAudience(
  url: string,
  userKey: string,
  audience: string,
): Promise<MintedToken> {
  const answer = await postToService(url, "/api/session-tokens", {
    json: { audience },
    bearer: userKey,
  });
  if (!answer) throw unreachable(url);
  const { sessionToken, expiresAt } = answer.body;
  if (answer.status === 201 && typeof sessionToken === "string") {
    return { sessionToken, expiresAt: String(expiresAt) };
  }
  const reason = reasonOf(answer);
  if (answer.status === 401 || answer.status === 403) throw keyRejected(reason);
  if (answer.status === 429) throw tooMany(answer);
  throw new CliError(EXIT.ERROR, `AgentPass could not mint a token: ${reason}`);
}

function keyRejected(reason: string): CliError {
  return new CliError(
    EXIT.KEY_REJECTED,
    `Your user key was rejected (${reason}). Log in again with: agentpass login`,
  );
}

function tooMany(answer: ServiceAnswer): CliError {
  return new CliError(
    EXIT.ERROR,
    `Too many tokens minted with this key; try again in ${retryWait(answer)} seconds (or reuse: agentpass token)`,
  );
}

export function unreachable(url: string): CliError {
  return new CliError(EXIT.UNREACHABLE, `Cannot reach AgentPass at ${url}`);
}
