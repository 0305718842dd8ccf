import { type ApiCall, readBearer } from "@agentpass/http";
import { SESSION_TOKEN_CHALLENGE, SESSION_TOKEN_HEADER } from "@agentpass/verify";

/**
 * How the token was sent: `Authorization: DPoP` (RFC 9449 section 7.1, with a proof of the
 * agent's key in the `DPoP` header), `Authorization: Bearer`, or `x-session-token`.
 */
export type TokenScheme = "DPoP" | "Bearer" | "header";

/** The session token a request carries, if any, and whether it carries two that differ. */
export type SentToken =
  | { kind: "none" }
  | {
      kind: "token";
      token: string;
      scheme: TokenScheme;
      /** The `DPoP` header (empty counts as none); forwarded only with the DPoP scheme. */
      proof: string | undefined;
    }
  | { kind: "conflict" };

const NONE: SentToken = { kind: "none" };
const CONFLICT: SentToken = { kind: "conflict" };

/**
 * The session token of a request: in `x-session-token`, or as `Authorization: DPoP` or `Bearer`
 * (RFC 6750 section 2.1), or in the header and `Authorization` with the same value. Two
 * different values are a conflict, never a choice: which one the agent meant is not ours to
 * guess.
 */
export function readSessionToken(request: ApiCall): SentToken {
  const header = request.header(SESSION_TOKEN_HEADER) || undefined;
  const proof = request.header("dpop") || undefined;
  const authorization = readAuthorization(request.header("authorization"));
  if (authorization === undefined) {
    return header === undefined ? NONE : { kind: "token", token: header, scheme: "header", proof };
  }
  if (header !== undefined && header !== authorization.token) return CONFLICT;
  return { kind: "token", ...authorization, proof };
}

/** The token of `Authorization: Bearer` or `Authorization: DPoP`; none for another scheme. */
function readAuthorization(
  authorization: string | undefined,
): { token: string; scheme: "DPoP" | "Bearer" } | undefined {
  const bearer = readBearer(authorization);
  if (bearer.kind === "present") return { token: bearer.value, scheme: "Bearer" };
  // RFC 9110 section 11.1: a scheme is case-insensitive (clients write `DPoP`).
  if (authorization === undefined || !/^dpop /i.test(authorization)) return undefined;
  const token = authorization.slice(5).trim();
  return token === "" ? undefined : { token, scheme: "DPoP" };
}

/** RFC 6750's errors of a Bearer challenge. */
type BearerError = "invalid_token" | "invalid_request";

/** The errors of a DPoP challenge (RFC 9449 section 7.1): no proof, or a proof refused. */
export type DpopError = "invalid_token" | "invalid_dpop_proof";

/**
 * The algorithms a DPoP challenge asks a client to sign with: ES256, which every AgentPass
 * component makes its keys with, and EdDSA. The metadata (`protected-resource.ts`) lists every
 * algorithm AgentPass accepts.
 */
export const DPOP_CHALLENGE_ALGS = "ES256 EdDSA";

/**
 * The `WWW-Authenticate` value of a refusal: first the RFC 6750 Bearer challenge naming the
 * resource's metadata (RFC 9728 section 5.1: OAuth clients read it from a Bearer challenge that
 * comes first), with `error` once a token was sent (and `error_description` where the error
 * alone does not tell a client what to do); then, for a token bound to a key whose proof is
 * missing or refused, the DPoP challenge a DPoP client reads (RFC 9449 section 7.1 lets a
 * resource send both); last the challenge clients of the `x-session-token` header have always
 * read.
 */
export function challengeOf(
  resourceMetadataUrl: string,
  bearer: { error?: BearerError; description?: string } = {},
  dpop?: { error: DpopError; description: string },
  agentAuthDiscovery?: string,
): string {
  let challenge = `Bearer resource_metadata="${resourceMetadataUrl}"`;
  if (bearer.error) challenge += `, error="${bearer.error}"`;
  if (bearer.description) challenge += `, error_description="${bearer.description}"`;
  if (dpop) {
    const description = quotable(dpop.description);
    challenge += `, DPoP error="${dpop.error}", error_description="${description}", algs="${DPOP_CHALLENGE_ALGS}"`;
  }
  challenge += `, ${SESSION_TOKEN_CHALLENGE}`;
  // Agent Auth Protocol section 5.14: where an agent registers to act here with its own key.
  return agentAuthDiscovery
    ? `${challenge}, AgentAuth discovery="${agentAuthDiscovery}"`
    : challenge;
}

/**
 * `text` in the characters RFC 6750 (section 3) allows in `error_description`: AgentPass's
 * descriptions may quote (`typ must be "dpop+jwt"`), so a double quote becomes a single one; no
 * backslash, nothing outside printable ASCII (which would make the header unsendable, too).
 */
function quotable(text: string): string {
  return text.replaceAll('"', "'").replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "");
}

/**
 * Why a token AgentPass vouches for finds no account: said in the challenge without RFC 6750's
 * `invalid_token`, which tells OAuth and MCP clients to refresh or authorize again, in a loop,
 * while the token is fine and it is the account that is missing.
 */
export const NO_ACCOUNT_DESCRIPTION =
  "The token is valid, but no account here has its email: the notes API's admin must add one";

/**
 * Why a working token bound to no partner is refused where only bound ones are taken (`/mcp`):
 * said in the challenge, so a client that left out `resource` learns what to change instead of
 * asking the person to consent again and again.
 */
export const UNBOUND_TOKEN_DESCRIPTION =
  "The token is not bound to this resource: ask AgentPass for it with the resource parameter (RFC 8707)";
