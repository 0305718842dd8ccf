import { Counter, type Registry } from "prom-client";

/** How a request was authenticated: a session token verified, or a bound token introspected. */
export type AuthenticationKind = "verify" | "introspect";

/** Why AgentPass could not vouch for a token, as the notes API's 503s are counted. */
type IdentityFailure = "identity_unreachable" | "partner_key_refused" | "identity_error";

/** What authentication tells the metrics: each outcome, and why an answer was 503. */
export interface AuthenticationCounts {
  /** One authentication by its code: `ok`, or the refusal's code (`session_token_invalid`, …). */
  count(kind: AuthenticationKind, code: string): void;
  /** One 503 `identity_unavailable`, by the cause `@agentpass/verify` gave (`network_error`, …). */
  countIdentityFailure(cause: string): void;
}

// The verifier's own codes for "our partner key is not taken" (verify and introspection's words).
const PARTNER_KEY_REFUSED = new Set([
  "partner_key_invalid",
  "partner_key_revoked",
  "partner_key_missing",
  "partner_key_missing_or_invalid",
  "invalid_client",
  "no_partner_key",
]);

/**
 * The notes API's authentication series in `registry`: authentications by kind and code, and
 * the 503s AgentPass caused, by reason: unreachable (no answer in time), our partner key refused,
 * or any other answer that is no verdict on the token (its own 503, 500 or 429).
 */
export function createAuthenticationCounts(registry: Registry): AuthenticationCounts {
  const authentications = new Counter({
    name: "agentpass_notes_authentications_total",
    help: "Requests authenticated through AgentPass, by kind (verify, introspect) and code (ok, or the refusal's)",
    labelNames: ["kind", "code"],
    registers: [registry],
  });
  const failures = new Counter({
    name: "agentpass_notes_identity_failures_total",
    help: "Answers 503 identity_unavailable, by reason: identity_unreachable, partner_key_refused, identity_error",
    labelNames: ["reason"],
    registers: [registry],
  });
  return {
    count: (kind, code) => authentications.inc({ kind, code }),
    countIdentityFailure: (cause) => failures.inc({ reason: identityFailureOf(cause) }),
  };
}

function identityFailureOf(cause: string): IdentityFailure {
  if (cause === "network_error") return "identity_unreachable";
  return PARTNER_KEY_REFUSED.has(cause) ? "partner_key_refused" : "identity_error";
}
