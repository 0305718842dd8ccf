/**
 * What a verification tells a partner. `status` is the HTTP status, or 0 when none came back.
 *
 * @example
 * const result = await verify(partnerKey, token);
 * if (result.ok) console.log(result.email);
 * else if (result.status === 403) console.error("rotate the partner key");
 */
export type VerifyResult =
  | { ok: true; email: string; status: 200; expiresAt?: Date }
  | { ok: false; error: string; status: number };

/**
 * The public AgentPass service. Pass another `apiUrl` for local development or self-hosting.
 *
 * @example
 * await verify(partnerKey, token, process.env.AGENTPASS_URL ?? DEFAULT_API_URL);
 */
export const DEFAULT_API_URL = "https://agentpass.dev";

/**
 * The error text of a result when the service could not be reached (spec section 2).
 *
 * @example
 * if (!result.ok && result.error === NETWORK_ERROR) return retryLater();
 */
export const NETWORK_ERROR = "Network error: cannot reach API";

/** How long a verification may take before it counts as a network failure. */
export const DEFAULT_TIMEOUT_MS = 5000;

export const TOKEN_EXPIRES_HEADER = "agentpass-token-expires-at";
