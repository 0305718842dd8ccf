import type { CallContext } from "./post-to-agentpass.ts";

/**
 * The DPoP proof (RFC 9449) a request came with, and that request's method and URL: what you
 * forward for AgentPass to check a session token bound to a key against. The middlewares make it
 * themselves from `Authorization: DPoP <token>` and the `DPoP` header.
 *
 * @example
 * const result = await verifier.verify(token, {
 *   dpop: { proof: req.headers.dpop, method: req.method, url: `https://api.example${req.path}` },
 * });
 */
export interface RequestProof {
  /**
   * The request's `DPoP` header; absent (or empty) when it had none: a bound token then fails
   * with `session_token_proof_required`.
   */
  proof?: string | undefined;
  /** The method of the request you received. */
  method: string;
  /** The absolute URL the agent called (your public one behind a proxy); a query is ignored. */
  url: string;
}

/**
 * What a verification may carry beside the token: your request's id and trace (see
 * {@link CallContext}), and the proof it came with.
 */
export interface VerifyContext extends CallContext {
  /**
   * The request's proof, method and URL. A result got with one is never cached nor shared with
   * another call: AgentPass accepts each proof once.
   */
  dpop?: RequestProof | undefined;
}

/** The codes of AgentPass's verdicts on a bound token's proof (status 401). */
export const PROOF_REQUIRED = "session_token_proof_required";
export const PROOF_INVALID = "session_token_proof_invalid";

/** A `dpop` AgentPass would refuse, refused without a request in the service's own words. */
export const INVALID_DPOP = {
  ok: false,
  error: "Invalid dpop: expected {proof, method, url}",
  status: 400,
  code: "dpop_field_invalid",
} as const;

/** The longest proof, method or URL AgentPass takes. */
const MAX_FIELD_CHARS = 8192;

/**
 * The `dpop` of a call's context (none when none is given), or `INVALID_DPOP` when it is not
 * `{ proof?, method, url }` with an absolute http(s) URL. Never throws, whatever `context` is.
 */
export function requestProofOf(
  context: unknown,
): { ok: true; dpop?: RequestProof } | typeof INVALID_DPOP {
  const dpop = (context as { dpop?: unknown } | null | undefined)?.dpop;
  if (dpop === undefined) return { ok: true };
  if (typeof dpop !== "object" || dpop === null) return INVALID_DPOP;
  const { proof, method, url } = dpop as Record<string, unknown>;
  // An empty proof is no proof, as an empty header is no header.
  const sent = proof === "" ? undefined : proof;
  const valid =
    (sent === undefined || isField(sent)) && isField(method) && isField(url) && isHttpUrl(url);
  return valid ? { ok: true, dpop: { proof: sent, method, url } } : INVALID_DPOP;
}

function isField(value: unknown): value is string {
  return typeof value === "string" && value !== "" && value.length <= MAX_FIELD_CHARS;
}

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === "https:" || protocol === "http:";
  } catch {
    return false;
  }
}
