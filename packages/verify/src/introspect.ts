import { callIntrospect, type IntrospectResult } from "./call-introspect.ts";
import { type RequestProof, requestProofOf } from "./request-proof.ts";
import { DEFAULT_TIMEOUT_MS } from "./result.ts";
import { checkSetup, type SetupFailure, serviceEndpoint } from "./verify.ts";

export interface IntrospectOptions {
  /** Your partner key (`apk_…`), sent as a Bearer credential. */
  partnerKey: string;
  /** The AgentPass URL; defaults to `AGENTPASS_URL` (none set: `code: "api_url_missing"`). */
  apiUrl?: string;
  /** Time limit of the call; past it the result is the network error. Default 5000. */
  timeoutMs?: number;
  /** A fetch implementation, for runtimes or tests that need another. */
  fetch?: typeof fetch;
  /**
   * The DPoP proof the request came with, and its method and URL: AgentPass then checks a bound
   * token's proof as `verify` does (`session_token_proof_required`, `…_invalid`).
   */
  dpop?: RequestProof;
}

/** A token that is not a non-empty string, refused without a request (RFC 6749's code). */
export const MISSING_TOKEN = {
  ok: false,
  error: "Missing token",
  status: 400,
  code: "invalid_request",
} as const;

/** `<apiUrl>/oauth/introspect`, or why there is none. */
function introspectEndpoint(apiUrl: unknown): string | SetupFailure {
  return serviceEndpoint(apiUrl, "/oauth/introspect");
}

/**
 * Asks AgentPass about a session token (RFC 7662 introspection): whose it is, and whether it is
 * bound to you (`aud`, your partner id). Never throws, whatever the arguments. Use it where a
 * token must have been minted for you alone (`agentpass token --audience <your partner id>`), so
 * that a token the person gave another partner cannot be replayed to you; `verify` accepts
 * unbound tokens too.
 *
 * @param token - the token the agent sent you
 * @param options - your partner key; optionally `apiUrl`, `timeoutMs`, `fetch`, `dpop`
 * @returns `{ ok: true, email, sub, aud?, … }` for an active token, `code: "token_inactive"` for
 *   any token AgentPass does not vouch for to you, or another failure with its `code` (the
 *   network error is `network_error`, status 0).
 *
 * @example
 * import { introspect } from "@agentpass/verify";
 * const result = await introspect(token, { partnerKey: process.env.AGENTPASS_PARTNER_KEY! });
 * if (!result.ok || !result.aud) return res.status(401).json({ error: "Bound token required" });
 * const user = await db.users.findByEmail(result.email);
 */
export function introspect(token: unknown, options: IntrospectOptions): Promise<IntrospectResult> {
  const given: Partial<IntrospectOptions> =
    typeof options === "object" && options !== null ? options : {};
  const endpoint = introspectEndpoint(given.apiUrl);
  const refused = checkSetup(given.partnerKey, endpoint);
  if (refused) return Promise.resolve(refused);
  if (typeof token !== "string" || token === "") return Promise.resolve(MISSING_TOKEN);
  const proof = requestProofOf(given);
  if (!proof.ok) return Promise.resolve(proof);
  const timeoutMs = given.timeoutMs;
  return callIntrospect({
    endpoint: endpoint as string,
    partnerKey: given.partnerKey as string,
    token,
    dpop: proof.dpop,
    timeoutMs:
      typeof timeoutMs === "number" && timeoutMs > 0 && Number.isFinite(timeoutMs)
        ? timeoutMs
        : DEFAULT_TIMEOUT_MS,
    fetch: typeof given.fetch === "function" ? given.fetch : globalThis.fetch,
  });
}
