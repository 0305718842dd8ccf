import type { Verifier } from "./create-verifier.ts";
import type { CallContext } from "./post-to-agentpass.ts";

/** The outcome of authenticating one request, with the answer to give when it fails. */
export type AuthResult =
  | { ok: true; email: string }
  | {
      ok: false;
      status: 400 | 401 | 503;
      error: string;
      code:
        | "invalid_request"
        | "session_token_missing"
        | "session_token_invalid"
        | "identity_unavailable";
      /** For `identity_unavailable`: the code of what failed (`network_error`, …), to log. */
      cause?: string;
    };

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

/**
 * The headers of a failed authentication's answer: for a 400 or 401 the challenges (RFC 9110
 * requires one on a 401), the Bearer one with RFC 6750's `error` once a token was sent; for a
 * 503 the retry.
 */
export function failureHeaders(
  status: 400 | 401 | 503,
  code?: Exclude<AuthResult, { ok: true }>["code"],
): Record<string, string> {
  if (status === 503) return { "Retry-After": String(RETRY_AFTER_SECONDS) };
  const error =
    status === 400 ? "invalid_request" : code === "session_token_invalid" ? "invalid_token" : "";
  const bearer = error ? `Bearer error="${error}"` : "Bearer";
  return { "WWW-Authenticate": `${bearer}, ${SESSION_TOKEN_CHALLENGE}` };
}

/** Reads a request header by its lowercase name. */
type HeaderReader = (name: string) => string | null | undefined;

/**
 * Authenticates a request (a Fetch `Request`, or the token itself): the session token in
 * `x-session-token` or as `Authorization: Bearer` (both at once only if equal, else 400
 * `invalid_request`); no token → 401 `Missing session token`; a token AgentPass rejects → 401
 * `Invalid or expired session token`; AgentPass unreachable, failing, or refusing your own
 * partner key → 503 `Identity service unavailable` — never a 401 (the agent must not re-mint
 * for your outage) and never a pass. `context` is passed to `verifier.verify`: your request's id
 * and trace, for AgentPass's log.
 *
 * @example
 * const auth = await authenticate(verifier, request);
 * if (!auth.ok) return Response.json({ error: auth.error, code: auth.code }, { status: auth.status });
 */
export function authenticate(
  verifier: Verifier,
  input: Request | string | null | undefined,
  context?: CallContext,
): Promise<AuthResult> {
  if (typeof input === "string" || input == null) {
    return authenticateToken(verifier, input, context);
  }
  return authenticateHeaders(verifier, (name) => input.headers.get(name), context);
}

/** `authenticate` for a framework's request, read through `header`. */
export function authenticateHeaders(
  verifier: Verifier,
  header: HeaderReader,
  context?: CallContext,
): Promise<AuthResult> {
  const token = header(SESSION_TOKEN_HEADER) || undefined;
  const bearer = bearerToken(header("authorization"));
  if (bearer !== undefined && token !== undefined && bearer !== token) {
    return Promise.resolve(CONFLICT);
  }
  return authenticateToken(verifier, bearer ?? token, context);
}

async function authenticateToken(
  verifier: Verifier,
  token: string | null | undefined,
  context: CallContext | undefined,
): Promise<AuthResult> {
  if (!token) return MISSING;
  const result = await verifier.verify(token, context);
  if (result.ok) return { ok: true, email: result.email };
  const tokenRejected =
    result.code === "session_token_invalid" || result.code === "session_token_field_invalid";
  return tokenRejected ? REJECTED : { ...UNAVAILABLE, cause: result.code };
}

/**
 * The credential of `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 9110
 * section 11.1), or undefined for another scheme or an empty one.
 */
function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization || !/^bearer /i.test(authorization)) return undefined;
  return authorization.slice(7).trim() || undefined;
}
