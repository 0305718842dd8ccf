import { calledUrlOf, publicBaseOf } from "./called-url.ts";
import type { Verifier } from "./create-verifier.ts";
import type { CallContext } from "./post-to-agentpass.ts";
import {
  INVALID_DPOP,
  PROOF_INVALID,
  PROOF_REQUIRED,
  type VerifyContext,
} from "./request-proof.ts";
import type { Agent } from "./result.ts";

/**
 * The outcome of authenticating one request, with the answer to give when it fails. For the two
 * proof codes `error` is AgentPass's message, saying which check failed.
 */
export type AuthResult =
  | { ok: true; email: string; agent?: Agent }
  | {
      ok: false;
      status: 400 | 401 | 503;
      error: string;
      code:
        | "invalid_request"
        | "session_token_missing"
        | "session_token_invalid"
        | "session_token_proof_required"
        | "session_token_proof_invalid"
        | "identity_unavailable";
      /** For `identity_unavailable`: the code of what failed (`network_error`, …), to log. */
      cause?: string;
    };

/** How `authenticate` and the middlewares name the URL a DPoP proof must be for. */
export interface AuthOptions {
  /**
   * Your API's public base URL (`https://api.example.com`), when a proxy in front of it makes the
   * requests you receive name another scheme, host or port: a DPoP proof is checked against this
   * and the request's path. Default: the scheme and host the request itself was addressed to.
   */
  publicUrl?: string | undefined;
  /**
   * The AgentPass URL whose Agent Auth discovery a 401 names (`WWW-Authenticate: AgentAuth
   * discovery="<url>/.well-known/agent-configuration"`, beside Bearer), so that an agent that
   * knows the Agent Auth Protocol finds where to register. Unset: no such challenge.
   */
  agentAuthChallenge?: string | undefined;
}

/** A request as the middlewares read it. */
export interface IncomingRequest {
  /** Reads a header by its lowercase name. */
  header: (name: string) => string | null | undefined;
  method: string;
  /** The URL the agent called, without query; asked only of a request under the DPoP scheme. */
  url: () => string;
}

// RFC 6750's code for one request with two credentials; the notes API's words for it.
const CONFLICT = {
  ok: false,
  status: 400,
  error: "Two different session tokens: send one, as Authorization: Bearer or x-session-token",
  code: "invalid_request",
} as const;
const MISSING = {
  ok: false,
  status: 401,
  error: "Missing session token",
  code: "session_token_missing",
} as const;
const REJECTED = {
  ok: false,
  status: 401,
  error: "Invalid or expired session token",
  code: "session_token_invalid",
} as const;
/** A proof AgentPass would not even read: longer than it takes, or for a URL that is none. */
const UNREADABLE_PROOF = {
  ok: false,
  status: 401,
  error: "Invalid DPoP proof: the proof or this request's URL is malformed or too long",
  code: PROOF_INVALID,
} as const;
const UNAVAILABLE = {
  ok: false,
  status: 503,
  error: "Identity service unavailable",
  code: "identity_unavailable",
} as const;

/**
 * The header an agent sends its session token in (or as `Authorization: Bearer`).
 *
 * @example
 * const token = request.headers.get(SESSION_TOKEN_HEADER);
 */
export const SESSION_TOKEN_HEADER = "x-session-token";

/** Seconds a client should wait before retrying when AgentPass is unavailable. */
const RETRY_AFTER_SECONDS = 5;

/**
 * The challenge naming the `x-session-token` header. A 401 or 400 of the middlewares sends it
 * after RFC 6750's Bearer challenge, since the token is taken in either header.
 */
export const SESSION_TOKEN_CHALLENGE = `AgentPass-Session header="${SESSION_TOKEN_HEADER}"`;

/** The proof algorithms AgentPass checks, as a DPoP challenge names them (RFC 9449 section 7.1). */
const DPOP_ALGS = "ES256 EdDSA";

/**
 * The headers of a failed authentication's answer: for a 400 or 401 the challenges (RFC 9110
 * requires one on a 401), the Bearer one with RFC 6750's `error` once a token was sent, or for a
 * bound token's missing or failed proof the DPoP one (RFC 9449) with `error` as its
 * `error_description`; for a 503 the retry.
 */
export function failureHeaders(
  status: 400 | 401 | 503,
  code?: Exclude<AuthResult, { ok: true }>["code"],
  error?: string,
  agentAuthChallenge?: string,
): Record<string, string> {
  if (status === 503) return { "Retry-After": String(RETRY_AFTER_SECONDS) };
  const agentAuth =
    status === 401 && agentAuthChallenge
      ? `, AgentAuth discovery="${agentAuthChallenge.replace(/\/+$/, "")}/.well-known/agent-configuration"`
      : "";
  if (code === PROOF_REQUIRED || code === PROOF_INVALID) {
    return { "WWW-Authenticate": `${dpopChallenge(code, error)}${agentAuth}` };
  }
  const bearerError =
    status === 400 ? "invalid_request" : code === "session_token_invalid" ? "invalid_token" : "";
  const bearer = bearerError ? `Bearer error="${bearerError}"` : "Bearer";
  return { "WWW-Authenticate": `${bearer}, ${SESSION_TOKEN_CHALLENGE}${agentAuth}` };
}

/**
 * `DPoP error=…, error_description=…, algs=…`: `invalid_token` for a bound token sent without
 * its proof, `invalid_dpop_proof` for a proof that failed a check.
 */
function dpopChallenge(code: typeof PROOF_REQUIRED | typeof PROOF_INVALID, description?: string) {
  const error = code === PROOF_REQUIRED ? "invalid_token" : "invalid_dpop_proof";
  const said = description ? `, error_description="${quotable(description)}"` : "";
  return `DPoP error="${error}"${said}, algs="${DPOP_ALGS}"`;
}

/**
 * `text` in the characters RFC 6750 (section 3) allows in `error_description`: no `"` or `\`
 * (a double quote becomes a single one), nothing outside printable ASCII.
 */
function quotable(text: string): string {
  return text.replaceAll('"', "'").replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "");
}

/**
 * Authenticates a request (a Fetch `Request`, or the token itself): the session token in
 * `x-session-token`, as `Authorization: Bearer` or as `Authorization: DPoP` (two different ones
 * → 400 `invalid_request`); no token → 401 `Missing session token`; a token AgentPass rejects →
 * 401 `Invalid or expired session token`; a token bound to the agent's key sent without its
 * proof → 401 `session_token_proof_required`, with a proof that fails a check → 401
 * `session_token_proof_invalid`; AgentPass unreachable, failing, or refusing your own partner
 * key → 503 `Identity service unavailable` — never a 401 (the agent must not re-mint for your
 * outage) and never a pass. Under the DPoP scheme the request's `DPoP` proof, method and URL
 * (`options.publicUrl` and its path, behind a proxy) go to AgentPass to check; a token sent as
 * Bearer or in `x-session-token` goes without a proof. `context` is passed to `verifier.verify`:
 * your request's id and trace, for AgentPass's log.
 *
 * @example
 * const auth = await authenticate(verifier, request, {}, { publicUrl: "https://api.example.com" });
 * if (!auth.ok) {
 *   const headers = failureHeaders(auth.status, auth.code, auth.error);
 *   return Response.json({ error: auth.error, code: auth.code }, { status: auth.status, headers });
 * }
 */
export function authenticate(
  verifier: Verifier,
  input: Request | string | null | undefined,
  context?: CallContext,
  options: AuthOptions = {},
): Promise<AuthResult> {
  if (typeof input === "string" || input == null) {
    return authenticateToken(verifier, input, context);
  }
  const base = publicBaseOf(options.publicUrl);
  const request: IncomingRequest = {
    header: (name) => input.headers.get(name),
    method: input.method,
    url: () => calledUrlOf(base, input.url),
  };
  return authenticateHeaders(verifier, request, context);
}

/** `authenticate` for a framework's request. */
export function authenticateHeaders(
  verifier: Verifier,
  request: IncomingRequest,
  context?: CallContext,
): Promise<AuthResult> {
  const sent = request.header(SESSION_TOKEN_HEADER) || undefined;
  const credential = authorizationCredential(request.header("authorization"));
  if (credential !== undefined && sent !== undefined && credential.token !== sent) {
    return Promise.resolve(CONFLICT);
  }
  if (!credential?.dpop) return authenticateToken(verifier, credential?.token ?? sent, context);
  const dpop = {
    proof: request.header("dpop") || undefined,
    method: request.method,
    url: request.url(),
  };
  return authenticateToken(verifier, credential.token, { ...context, dpop });
}

async function authenticateToken(
  verifier: Verifier,
  token: string | null | undefined,
  context: VerifyContext | undefined,
): Promise<AuthResult> {
  if (!token) return MISSING;
  const result = await verifier.verify(token, context);
  if (result.ok) {
    return result.agent
      ? { ok: true, email: result.email, agent: result.agent }
      : { ok: true, email: result.email };
  }
  switch (result.code) {
    case "session_token_invalid":
    case "session_token_field_invalid":
      return REJECTED;
    case PROOF_REQUIRED:
    case PROOF_INVALID:
      return { ok: false, status: 401, error: result.error, code: result.code };
    case INVALID_DPOP.code:
      return UNREADABLE_PROOF;
    default:
      return { ...UNAVAILABLE, cause: result.code };
  }
}

/**
 * The token of `Authorization: Bearer <token>` or `Authorization: DPoP <token>` (schemes are
 * case-insensitive, RFC 9110 section 11.1) and whether it came under DPoP, or undefined for
 * another scheme or an empty token.
 */
function authorizationCredential(
  authorization: string | null | undefined,
): { token: string; dpop: boolean } | undefined {
  const scheme = authorization ? /^(bearer|dpop) /i.exec(authorization) : null;
  if (!authorization || !scheme) return undefined;
  const token = authorization.slice(scheme[0].length).trim();
  return token ? { token, dpop: scheme[1]?.toLowerCase() === "dpop" } : undefined;
}
