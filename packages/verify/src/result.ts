/**
 * What a verification tells a partner. `status` is the HTTP status, or 0 when none came back;
 * `code` is the failure's stable machine code (AgentPass's own, or one of `LOCAL_CODES`): switch
 * on it, never on `error`, which is for people.
 *
 * @example
 * const result = await verify(partnerKey, token);
 * if (result.ok) console.log(result.email);
 * else if (result.code === "partner_key_revoked") console.error("rotate the partner key");
 */
export type VerifyResult =
  | { ok: true; email: string; status: 200; expiresAt?: Date; agent?: Agent }
  | { ok: false; error: string; status: number; code: string };

/**
 * The agent acting for the person, when the token was an agent's JWT or one an agent minted
 * (issue 54): its id (`agt_…`) and the name its person approved. Absent for any other token.
 */
export interface Agent {
  id: string;
  name: string;
}

/**
 * The codes of failures found before or without an answer from AgentPass; every other code is
 * AgentPass's own (`session_token_invalid`, `partner_key_revoked`, … in its API reference).
 */
export const LOCAL_CODES = {
  /** AgentPass could not be reached, or did not answer in time. */
  networkError: "network_error",
  /** No `apiUrl` was given and `AGENTPASS_URL` is not set: there is no default service. */
  apiUrlMissing: "api_url_missing",
  /** `apiUrl` is not an http(s) URL. */
  invalidApiUrl: "invalid_api_url",
  /** AgentPass answered something that is not its API's answer (a proxy's error page, say). */
  unexpectedResponse: "unexpected_response",
} as const;

/**
 * The error text of a result when the service could not be reached (its code is
 * `network_error`).
 *
 * @example
 * if (!result.ok && result.code === "network_error") return retryLater();
 */
export const NETWORK_ERROR = "Network error: cannot reach API";

/** How long a verification may take before it counts as a network failure. */
export const DEFAULT_TIMEOUT_MS = 5000;

export const TOKEN_EXPIRES_HEADER = "agentpass-token-expires-at";
