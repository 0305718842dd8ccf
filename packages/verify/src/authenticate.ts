import type { Verifier } from "./create-verifier.ts";

/** The outcome of authenticating one request, with the answer to give when it fails. */
export type AuthResult =
  | { ok: true; email: string }
  | {
      ok: false;
      status: 401 | 503;
      error: string;
      code: "session_token_missing" | "session_token_invalid" | "identity_unavailable";
      /** For `identity_unavailable`: the code of what failed (`network_error`, …), to log. */
      cause?: string;
    };

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
 * The header an agent sends its session token in.
 *
 * @example
 * const token = request.headers.get(SESSION_TOKEN_HEADER);
 */
export const SESSION_TOKEN_HEADER = "x-session-token";

/** Seconds a client should wait before retrying when AgentPass is unavailable. */
export const RETRY_AFTER_SECONDS = 5;

/**
 * The challenge of a 401 (RFC 9110 requires one): the credential is a session token in the
 * `x-session-token` header.
 */
export const SESSION_TOKEN_CHALLENGE = `AgentPass-Session header="${SESSION_TOKEN_HEADER}"`;

/** The headers of a failed authentication's answer: the 401 challenge, or the 503 retry. */
export function failureHeaders(status: 401 | 503): Record<string, string> {
  return status === 401
    ? { "WWW-Authenticate": SESSION_TOKEN_CHALLENGE }
    : { "Retry-After": String(RETRY_AFTER_SECONDS) };
}

/**
 * Authenticates a request (a Fetch `Request`, or the header's value): no token → 401 `Missing session token`; a token AgentPass rejects → 401 `Invalid or
 * expired session token`; AgentPass unreachable, failing, or refusing your own partner key →
 * 503 `Identity service unavailable` — never a 401 (the agent must not re-mint for your
 * outage) and never a pass.
 *
 * @example
 * const auth = await authenticate(verifier, request);
 * if (!auth.ok) return Response.json({ error: auth.error, code: auth.code }, { status: auth.status });
 */
export async function authenticate(
  verifier: Verifier,
  input: Request | string | null | undefined,
): Promise<AuthResult> {
  const token =
    typeof input === "string" || input == null ? input : input.headers.get(SESSION_TOKEN_HEADER);
  if (!token) return MISSING;
  const result = await verifier.verify(token);
  if (result.ok) return { ok: true, email: result.email };
  const tokenRejected =
    result.code === "session_token_invalid" || result.code === "session_token_field_invalid";
  return tokenRejected ? REJECTED : { ...UNAVAILABLE, cause: result.code };
}
