import { type DpopKey, dpopProof } from "./dpop-key.ts";
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
 * refresh token), or with `POST /api/session-tokens` for an audience. With a DPoP key the
 * request carries its proof and the token is bound to it (RFC 9449); without, the token is a
 * bearer token as ever. Failures become CliErrors, one exit code per kind.
 *
 * @example
 * const minted = await mintSessionToken("http://localhost:4000", key, null, null, Date.now);
 * // minted.sessionToken: "aps_…", for the x-session-token header
 */
export async function mintSessionToken(
  url: string,
  userKey: string,
  target: TokenTarget,
  dpopKey: DpopKey | null,
  now: () => number,
): Promise<MintedToken> {
  if (target && "audience" in target) {
    return mintAtSessionTokens(url, userKey, { audience: target.audience }, dpopKey, now);
  }
  const form = {
    grant_type: "refresh_token",
    refresh_token: userKey,
    client_id: CLIENT_ID,
    ...(target && { resource: target.resource }),
  };
  const answer = dpopKey
    ? await refreshWithProof(url, form, dpopKey, now)
    : await postToService(url, "/oauth/token", { form });
  if (!answer) throw unreachable(url);
  const minted = sessionTokenOf(answer, now);
  if (minted) {
    if (dpopKey && answer.body.token_type !== "DPoP") throw notBound(url);
    return minted;
  }
  const reason = reasonOf(answer);
  if (answer.body.error === "invalid_grant") throw keyRejected(reason);
  if (answer.body.error === "invalid_target" && target) {
    throw new CliError(
      EXIT.ERROR,
      `No partner is registered for the resource ${printable(target.resource, 200)} (${reason})`,
    );
  }
  if (answer.status === 429) throw tooMany(answer);
  if (answer.body.error === "invalid_dpop_proof" || answer.body.error === "use_dpop_nonce") {
    throw proofRefused(reason);
  }
  throw new CliError(EXIT.ERROR, `AgentPass could not mint a token: ${reason}`);
}

/**
 * The refresh grant with a proof. The token endpoint demands its current nonce: the first
 * answer is `use_dpop_nonce` with one, and the request is sent once more with it. Never more:
 * the second answer is final whatever it says, so a server that keeps demanding starts no loop.
 */
async function refreshWithProof(
  url: string,
  form: Record<string, string>,
  key: DpopKey,
  now: () => number,
): Promise<ServiceAnswer | null> {
  const send = async (nonce?: string) =>
    postToService(url, "/oauth/token", {
      form,
      dpop: dpopProof(key, { method: "POST", url: `${url}/oauth/token`, nonce }, now),
    });
  const first = await send();
  const demanded = first?.body.error === "use_dpop_nonce" ? first.dpopNonce : null;
  return demanded ? send(demanded) : first;
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

/**
 * `POST /api/session-tokens` with `{ audience }` (a token only that partner can verify) and/or
 * `{ agent }` (an agent's JWT: the token names the agent), bound to `dpopKey` by a proof for this
 * request (no `ath`, no nonce) when there is one.
 */
export async function mintAtSessionTokens(
  url: string,
  userKey: string,
  body: { audience?: string; agent?: string },
  dpopKey: DpopKey | null,
  now: () => number,
): Promise<MintedToken> {
  const mintUrl = `${url}/api/session-tokens`;
  const answer = await postToService(url, "/api/session-tokens", {
    json: body,
    bearer: userKey,
    ...(dpopKey && { dpop: dpopProof(dpopKey, { method: "POST", url: mintUrl }, now) }),
  });
  if (!answer) throw unreachable(url);
  const { sessionToken, expiresAt, tokenType } = answer.body;
  if (answer.status === 201 && typeof sessionToken === "string") {
    if (dpopKey && tokenType !== "DPoP") throw notBound(url);
    return { sessionToken, expiresAt: String(expiresAt) };
  }
  const reason = reasonOf(answer);
  if (answer.body.code === "dpop_proof_invalid") throw proofRefused(reason);
  if (answer.body.code === "agent_jwt_invalid") {
    throw new CliError(EXIT.ERROR, `AgentPass refused the agent (${reason})`);
  }
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

function proofRefused(reason: string): CliError {
  return new CliError(EXIT.ERROR, `AgentPass refused this login's DPoP proof (${reason})`);
}

/** A server that ignored the proof minted a bearer token: never hand it out as a bound one. */
function notBound(url: string): CliError {
  return new CliError(
    EXIT.ERROR,
    `AgentPass at ${url} did not bind the token to this login's key: it does not take DPoP proofs`,
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
