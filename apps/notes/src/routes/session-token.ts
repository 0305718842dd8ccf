import { type ApiCall, readBearer } from "@agentpass/http";
import { SESSION_TOKEN_CHALLENGE, SESSION_TOKEN_HEADER } from "@agentpass/verify";

/** The session token a request carries, if any, and whether it carries two that differ. */
type SentToken = { kind: "none" } | { kind: "token"; token: string } | { kind: "conflict" };

const NONE: SentToken = { kind: "none" };
const CONFLICT: SentToken = { kind: "conflict" };

/**
 * The session token of a request: in `x-session-token`, or as `Authorization: Bearer` (RFC 6750
 * section 2.1), or in both with the same value. Two different values are a conflict, never a
 * choice: which one the agent meant is not ours to guess.
 */
export function readSessionToken(request: ApiCall): SentToken {
  const header = request.header(SESSION_TOKEN_HEADER) || undefined;
  const bearer = readBearer(request.header("authorization"));
  if (bearer.kind !== "present")
    return header === undefined ? NONE : { kind: "token", token: header };
  if (header !== undefined && header !== bearer.value) return CONFLICT;
  return { kind: "token", token: bearer.value };
}

/**
 * The `WWW-Authenticate` value of a refusal: first the RFC 6750 Bearer challenge naming the
 * resource's metadata (RFC 9728 section 5.1: OAuth clients read it from a Bearer challenge that
 * comes first), with `error` once a token was sent (and `error_description` where the error
 * alone does not tell a client what to do), then the challenge clients of the
 * `x-session-token` header have always read.
 */
export function challengeOf(
  resourceMetadataUrl: string,
  error?: "invalid_token" | "invalid_request",
  description?: string,
): string {
  let bearer = `Bearer resource_metadata="${resourceMetadataUrl}"`;
  if (error) bearer += `, error="${error}"`;
  if (description) bearer += `, error_description="${description}"`;
  return `${bearer}, ${SESSION_TOKEN_CHALLENGE}`;
}

/**
 * Why a working token bound to no partner is refused where only bound ones are taken (`/mcp`):
 * said in the challenge, so a client that left out `resource` learns what to change instead of
 * asking the person to consent again and again.
 */
/**
 * Why a token AgentPass vouches for finds no account: said in the challenge without RFC 6750's
 * `invalid_token`, which tells OAuth and MCP clients to refresh or authorize again, in a loop,
 * while the token is fine and it is the account that is missing.
 */
export const NO_ACCOUNT_DESCRIPTION =
  "The token is valid, but no account here has its email: the notes API's admin must add one";

export const UNBOUND_TOKEN_DESCRIPTION =
  "The token is not bound to this resource: ask AgentPass for it with the resource parameter (RFC 8707)";
