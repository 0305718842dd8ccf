import type { Answer, InputFailure, PlainAnswer } from "@agentpass/http";
import { z } from "zod";
import { type RateLimitResult, rateLimitHeaders } from "../../../infra/rate-limit.ts";

/**
 * OAuth's own wire format, for every OAuth endpoint: form-encoded requests read through the
 * schema that documents them, and every refusal `{ error, error_description }` from one table
 * (RFC 6749 section 5.2 and the RFCs beside it), with `Cache-Control: no-store`.
 */
const FORM = "application/x-www-form-urlencoded";
export const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" };
/** OAuth requests are a few short fields: anything larger is refused before it is read. */
export const MAX_FORM_BYTES = 8192;

/**
 * Every refusal an OAuth endpoint answers, by the condition it answers: its status and its RFC
 * error code. A budget spent is 429 `temporarily_unavailable` with Retry-After (no RFC names a
 * code for it; `slow_down` is the device grant's own, for polling too fast).
 */
const OAUTH_REFUSALS = {
  invalid_request: { status: 400, error: "invalid_request" },
  body_too_large: { status: 413, error: "invalid_request" },
  invalid_client: { status: 401, error: "invalid_client" },
  invalid_grant: { status: 400, error: "invalid_grant" },
  invalid_target: { status: 400, error: "invalid_target" },
  unsupported_grant_type: { status: 400, error: "unsupported_grant_type" },
  unsupported_token_type: { status: 400, error: "unsupported_token_type" },
  invalid_redirect_uri: { status: 400, error: "invalid_redirect_uri" },
  invalid_client_metadata: { status: 400, error: "invalid_client_metadata" },
  authorization_pending: { status: 400, error: "authorization_pending" },
  slow_down: { status: 400, error: "slow_down" },
  access_denied: { status: 400, error: "access_denied" },
  expired_token: { status: 400, error: "expired_token" },
  invalid_dpop_proof: { status: 400, error: "invalid_dpop_proof" },
  use_dpop_nonce: { status: 400, error: "use_dpop_nonce" },
  rate_limited: { status: 429, error: "temporarily_unavailable" },
  unavailable: { status: 503, error: "temporarily_unavailable" },
  server_error: { status: 500, error: "server_error" },
} as const;

type OAuthRefusal = keyof typeof OAUTH_REFUSALS;

/** A refusal of the table, with what went wrong for the client to read. */
export function oauthError(
  refusal: OAuthRefusal,
  description: string,
  headers: Record<string, string> = {},
): Answer {
  const { status, error } = OAUTH_REFUSALS[refusal];
  return {
    status,
    body: { error, error_description: description },
    headers: { ...NO_STORE, ...headers },
  };
}

/** A budget spent: 429 with Retry-After and the RateLimit-* headers. */
export function tooManyRequests(counted: RateLimitResult, description: string): Answer {
  return oauthError("rate_limited", description, rateLimitHeaders(counted));
}

/**
 * What the router answers for an OAuth endpoint when a handler did not (a body over the limit or
 * cut short, a database out of reach, a fault): the same condition in OAuth's wire format. The
 * router's answer keeps its headers (Retry-After, the request id of a logged fault).
 */
export function renderOAuthError(answer: PlainAnswer): Answer {
  const refusal: OAuthRefusal =
    answer.status === 413
      ? "body_too_large"
      : answer.status === 429
        ? "rate_limited"
        : answer.status === 503
          ? "unavailable"
          : answer.status >= 500
            ? "server_error"
            : "invalid_request";
  const requestId = answer.body.requestId;
  const message = String(answer.body.error ?? "Request refused");
  const description = typeof requestId === "string" ? `${message} (${requestId})` : message;
  return oauthError(refusal, description, answer.headers);
}

/**
 * The answer to a form the router refused (the endpoint's schema is the one it documents): not
 * a form, a field repeated (RFC 6749 section 3.2), or a field missing or invalid.
 */
export function refuseForm(failure: InputFailure): Answer {
  if (failure.problem === "repeated") return refused(`${failure.field} is repeated`);
  if (failure.problem !== "schema") return refused(`Send ${FORM}`);
  const issue = failure.error.issues[0];
  const field = issue?.path.join(".") || "the form";
  return refused(issue?.code === "invalid_type" ? `Send ${field}` : `Invalid ${field}`);
}

function refused(description: string): Answer {
  return oauthError("invalid_request", description);
}

/** The form of introspection (RFC 7662) and revocation (RFC 7009): a token, and a hint. */
export const TokenForm = z.object({
  token: z.string(),
  token_type_hint: z.string().optional(),
});

/** The OpenAPI shape of every refusal. */
export const OAuthErrorSchema = z
  .object({ error: z.string(), error_description: z.string() })
  .meta({ id: "OAuthError" });

/** A form request body, read and documented through `schema`, refused as OAuth refuses. */
export function formInput<T extends z.ZodType>(schema: T) {
  return { input: { body: schema, encoding: "form" as const }, refuseInput: refuseForm };
}

/** A documented refusal. */
export function refusal(description: string) {
  return { description, content: { "application/json": { schema: OAuthErrorSchema } } };
}

/** The refusals every OAuth endpoint that reads a form may answer, besides its own. */
export const COMMON_REFUSALS = {
  "413": refusal("invalid_request: the body is over 8 KiB"),
  "500": refusal("server_error, with the request id of the logged fault"),
  "503": refusal("temporarily_unavailable: the database is out of reach; Retry-After"),
};
