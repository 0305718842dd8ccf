import { type ApiCall, childTraceparent, HttpError } from "@agentpass/http";
import {
  authenticate,
  type CallContext,
  canonicalizeEmail,
  failureHeaders,
  TOKEN_INACTIVE,
} from "@agentpass/verify";
import type { NotesContext } from "../context.ts";
import { ERRORS } from "../errors.ts";
import type { User } from "../store/store.ts";
import type { AuthenticationCounts, AuthenticationKind } from "./authentication-metrics.ts";
import { RESOURCE_METADATA_PATH } from "./protected-resource.ts";
import {
  challengeOf,
  NO_ACCOUNT_DESCRIPTION,
  readSessionToken,
  UNBOUND_TOKEN_DESCRIPTION,
} from "./session-token.ts";

/** The OpenAPI security of the REST endpoints: the session token in either header. */
export const SESSION_TOKEN_SECURITY: Record<string, string[]>[] = [
  { sessionToken: [] },
  { bearerToken: [] },
];

/** The local user a request acts for; throws the `HttpError` to answer otherwise. */
export type Authenticate = (request: ApiCall) => Promise<User>;

/** Every refusal of authentication, built once per protected resource (its challenge differs). */
function refusalsFor(resourceMetadataUrl: string) {
  const challenge = (error?: "invalid_token" | "invalid_request", description?: string) => ({
    headers: { "WWW-Authenticate": challengeOf(resourceMetadataUrl, error, description) },
  });
  // The resource itself: its metadata URL without the well-known segment (RFC 9728 section 3.1).
  const resource = resourceMetadataUrl.replace(RESOURCE_METADATA_PATH, "");
  return {
    conflict: new HttpError(ERRORS.invalid_request, challenge("invalid_request")),
    missing: new HttpError(ERRORS.session_token_missing, challenge()),
    invalid: new HttpError(ERRORS.session_token_invalid, challenge("invalid_token")),
    unbound: new HttpError(ERRORS.session_token_unbound, {
      ...challenge("invalid_token", UNBOUND_TOKEN_DESCRIPTION),
      message: ERRORS.session_token_unbound.message.replace("<url>", resource),
    }),
    noAccount: new HttpError(ERRORS.no_account, challenge(undefined, NO_ACCOUNT_DESCRIPTION)),
    unavailable: new HttpError(ERRORS.identity_unavailable, { headers: failureHeaders(503) }),
  };
}

/**
 * Authentication of the REST endpoints: any session token AgentPass verifies for us, bound to
 * the notes API or to no partner (the client library, with its short cache of successes).
 * AgentPass down or refusing our own partner key is a 503, never a 401 and never a pass.
 */
export function verifiedUser(
  ctx: NotesContext,
  resourceMetadataUrl: string,
  counts: AuthenticationCounts,
): Authenticate {
  const refuse = refusalsFor(resourceMetadataUrl);
  return counted("verify", counts, async (request) => {
    const sent = readSessionToken(request);
    if (sent.kind === "conflict") throw refuse.conflict;
    const token = sent.kind === "token" ? sent.token : null;
    const auth = await authenticate(ctx.verifier, token, callContextOf(request));
    if (!auth.ok) {
      if (auth.code === "session_token_missing") throw refuse.missing;
      if (auth.code === "session_token_invalid") throw refuse.invalid;
      ctx.reportUnavailable(auth.cause ?? auth.code);
      counts.countIdentityFailure(auth.cause ?? auth.code);
      throw refuse.unavailable;
    }
    return localUser(ctx, auth.email, refuse.noAccount);
  });
}

/**
 * Authentication of `/mcp`: only a token minted for the notes API alone (`aud`), asked of
 * AgentPass by introspection on every request. A token the person gave another partner is
 * inactive to us, and an unbound one is refused too, so no partner can replay a token it was
 * given to act here as the person.
 */
export function boundTokenUser(
  ctx: NotesContext,
  resourceMetadataUrl: string,
  counts: AuthenticationCounts,
): Authenticate {
  const refuse = refusalsFor(resourceMetadataUrl);
  return counted("introspect", counts, async (request) => {
    const sent = readSessionToken(request);
    if (sent.kind === "conflict") throw refuse.conflict;
    if (sent.kind === "none") throw refuse.missing;
    // A verifier without introspection (no partner key configured) cannot tell: never a pass.
    if (!ctx.verifier.introspect) {
      ctx.reportUnavailable("no_partner_key");
      counts.countIdentityFailure("no_partner_key");
      throw refuse.unavailable;
    }
    const result = await ctx.verifier.introspect(sent.token, callContextOf(request));
    if (!result.ok) {
      if (result.code === TOKEN_INACTIVE) throw refuse.invalid;
      ctx.reportUnavailable(result.code);
      counts.countIdentityFailure(result.code);
      throw refuse.unavailable;
    }
    if (result.aud === undefined) throw refuse.unbound;
    return localUser(ctx, result.email, refuse.noAccount);
  });
}

/** `authenticate`, each outcome counted: `ok`, or the code of the refusal it threw. */
function counted(
  kind: AuthenticationKind,
  counts: AuthenticationCounts,
  authenticate: Authenticate,
): Authenticate {
  return async (request) => {
    try {
      const user = await authenticate(request);
      counts.count(kind, "ok");
      return user;
    } catch (error) {
      counts.count(kind, error instanceof HttpError ? error.code : "error");
      throw error;
    }
  };
}

/**
 * What the call to AgentPass carries of the request it authenticates: its id, so AgentPass logs
 * its answer under the same id, and its trace, with a span of this call.
 */
function callContextOf(request: ApiCall): CallContext {
  return {
    requestId: request.requestId,
    traceparent: request.trace && childTraceparent(request.trace),
  };
}

async function localUser(ctx: NotesContext, email: string, noAccount: HttpError): Promise<User> {
  const canonical = canonicalFormOf(ctx, email);
  const user = canonical === null ? undefined : await ctx.store.findUserByEmail(canonical);
  if (!user) throw noAccount;
  return user;
}

/**
 * `canonicalizeEmail`, remembered per address in the service's bounded cache: AgentPass answers
 * in that form already, so on every request this is a check that costs a lookup.
 */
function canonicalFormOf(ctx: NotesContext, email: string): string | null {
  let canonical = ctx.canonicalEmails.get(email);
  if (canonical === undefined) {
    const result = canonicalizeEmail(email);
    canonical = result.ok ? result.email : false;
    ctx.canonicalEmails.set(email, canonical);
  }
  return canonical === false ? null : canonical;
}
