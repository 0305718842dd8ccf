import { type ApiCall, childTraceparent, HttpError } from "@agentpass/http";
import {
  type CallContext,
  canonicalizeEmail,
  failureHeaders,
  isAgentJwt,
  type RequestProof,
  TOKEN_INACTIVE,
} from "@agentpass/verify";
import type { NotesContext } from "../context.ts";
import { ERRORS } from "../errors.ts";
import type { NoteAgent, User } from "../store/store.ts";
import type { AuthenticationCounts, AuthenticationKind } from "./authentication-metrics.ts";
import { resourceMetadataUrl } from "./protected-resource.ts";
import {
  challengeOf,
  type DpopError,
  NO_ACCOUNT_DESCRIPTION,
  readSessionToken,
  type SentToken,
  UNBOUND_TOKEN_DESCRIPTION,
} from "./session-token.ts";

/** The OpenAPI security of the REST endpoints: the session token in either header. */
export const SESSION_TOKEN_SECURITY: Record<string, string[]>[] = [
  { sessionToken: [] },
  { bearerToken: [] },
];

/** The local user a request acts for, with the agent that acts, when one does. */
export type Caller = User & { agent?: NoteAgent };

/** The caller a request acts for; throws the `HttpError` to answer otherwise. */
export type Authenticate = (request: ApiCall) => Promise<Caller>;

/** A protected resource: where clients reach the API, and the resource's path (`RESOURCE_PATHS`). */
interface ProtectedResource {
  publicUrl: string;
  path: string;
  /** AgentPass's public URL: its Agent Auth discovery is named in every 401's challenges. */
  agentpassUrl: string;
}

type ProofCode = "session_token_proof_required" | "session_token_proof_invalid";

/** The codes of AgentPass's verdicts on a bound token's proof (verify and introspection). */
const PROOF_CODES = new Map<string, ProofCode>([
  ["session_token_proof_required", "session_token_proof_required"],
  ["session_token_proof_invalid", "session_token_proof_invalid"],
  // A proof longer than AgentPass takes, refused by the client library before it asks: a 401
  // like any proof it cannot check, never a 503. (The URL cannot be: the server refuses a
  // request line that long with 431.)
  ["dpop_field_invalid", "session_token_proof_invalid"],
]);
/** The DPoP challenge's error of each (RFC 9449 section 7.1): no proof, or a refused one. */
const DPOP_ERRORS: Record<ProofCode, DpopError> = {
  session_token_proof_required: "invalid_token",
  session_token_proof_invalid: "invalid_dpop_proof",
};
const TOO_LONG = "Invalid DPoP proof: The DPoP proof is too long";

/** Every refusal of authentication, built once per protected resource (its challenge differs). */
function refusalsFor(resource: ProtectedResource) {
  const metadataUrl = resourceMetadataUrl(resource.publicUrl, resource.path);
  const discovery = `${resource.agentpassUrl}/.well-known/agent-configuration`;
  const challenge = (error?: "invalid_token" | "invalid_request", description?: string) => ({
    headers: {
      "WWW-Authenticate": challengeOf(metadataUrl, { error, description }, undefined, discovery),
    },
  });
  return {
    conflict: new HttpError(ERRORS.invalid_request, challenge("invalid_request")),
    missing: new HttpError(ERRORS.session_token_missing, challenge()),
    invalid: new HttpError(ERRORS.session_token_invalid, challenge("invalid_token")),
    unbound: new HttpError(ERRORS.session_token_unbound, {
      ...challenge("invalid_token", UNBOUND_TOKEN_DESCRIPTION),
      message: ERRORS.session_token_unbound.message.replace(
        "<url>",
        `${resource.publicUrl}${resource.path}`,
      ),
    }),
    noAccount: new HttpError(ERRORS.no_account, challenge(undefined, NO_ACCOUNT_DESCRIPTION)),
    unavailable: new HttpError(ERRORS.identity_unavailable, { headers: failureHeaders(503) }),
    /**
     * A token bound to the agent's key without its proof, or with one AgentPass refused: in
     * AgentPass's words (which check failed), with the DPoP challenge that says so.
     */
    proof(code: ProofCode, message: string): HttpError {
      const dpop = { error: DPOP_ERRORS[code], description: message };
      return new HttpError(ERRORS[code], {
        message,
        headers: { "WWW-Authenticate": challengeOf(metadataUrl, {}, dpop, discovery) },
      });
    },
  };
}

type Refusals = ReturnType<typeof refusalsFor>;

/**
 * Authentication of the REST endpoints: any session token AgentPass verifies for us, bound to
 * the notes API or to no partner (the client library, with its short cache of successes). A
 * token sent as `Authorization: DPoP` goes with its proof, which AgentPass checks (and which is
 * never cached: a proof is good once). AgentPass down or refusing our own partner key is a 503,
 * never a 401 and never a pass.
 */
export function verifiedUser(
  ctx: NotesContext,
  resource: ProtectedResource,
  counts: AuthenticationCounts,
): Authenticate {
  const refuse = refusalsFor(resource);
  return counted("verify", counts, async (request) => {
    const sent = readSessionToken(request);
    if (sent.kind === "conflict") throw refuse.conflict;
    if (sent.kind === "none") throw refuse.missing;
    const dpop = requestProofOf(sent, request, resource.publicUrl);
    const result = await ctx.verifier.verify(sent.token, { ...callContextOf(request), dpop });
    if (!result.ok) {
      if (result.code === "session_token_invalid" || result.code === "session_token_field_invalid")
        throw refuse.invalid;
      throw proofRefusalOf(result, refuse) ?? unavailable(ctx, counts, refuse, result.code);
    }
    return withAgent(await localUser(ctx, result.email, refuse.noAccount), result.agent);
  });
}

/**
 * Authentication of `/mcp`: only a token minted for the notes API alone (`aud`), asked of
 * AgentPass by introspection on every request. A token the person gave another partner is
 * inactive to us, and an unbound one is refused too, so no partner can replay a token it was
 * given to act here as the person. A token bound to the agent's key is taken only as
 * `Authorization: DPoP` with a proof AgentPass accepts (the introspection's DPoP extension).
 */
export function boundTokenUser(
  ctx: NotesContext,
  resource: ProtectedResource,
  counts: AuthenticationCounts,
): Authenticate {
  const refuse = refusalsFor(resource);
  return counted("introspect", counts, async (request) => {
    const sent = readSessionToken(request);
    if (sent.kind === "conflict") throw refuse.conflict;
    if (sent.kind === "none") throw refuse.missing;
    // A verifier without introspection (no partner key configured) cannot tell: never a pass.
    if (!ctx.verifier.introspect) throw unavailable(ctx, counts, refuse, "no_partner_key");
    const dpop = requestProofOf(sent, request, resource.publicUrl);
    // An agent's own JWT (Agent Auth Protocol) is for us alone by its `aud`, which AgentPass
    // checks against our resources, and good once: verified, it is as bound as a token can be.
    if (isAgentJwt(sent.token)) {
      const verified = await ctx.verifier.verify(sent.token, callContextOf(request));
      if (verified.ok) {
        return withAgent(await localUser(ctx, verified.email, refuse.noAccount), verified.agent);
      }
      if (verified.code === "session_token_invalid") throw refuse.invalid;
      throw unavailable(ctx, counts, refuse, verified.code);
    }
    const result = await ctx.verifier.introspect(sent.token, { ...callContextOf(request), dpop });
    if (!result.ok) {
      if (result.code === TOKEN_INACTIVE) throw refuse.invalid;
      throw proofRefusalOf(result, refuse) ?? unavailable(ctx, counts, refuse, result.code);
    }
    // Asked without a proof, AgentPass vouches for a bound token and names its key (`cnf.jkt`):
    // sent as Bearer, it is refused here, as `/api/verify` refuses it.
    if (result.jkt !== undefined && dpop === undefined) {
      const { code, message } = ERRORS.session_token_proof_required;
      throw refuse.proof(code, message);
    }
    if (result.aud === undefined) throw refuse.unbound;
    return localUser(ctx, result.email, refuse.noAccount);
  });
}

/**
 * What AgentPass is to check a bound token's proof against, for a token sent as
 * `Authorization: DPoP` only (a bound token sent otherwise fails for want of one): the `DPoP`
 * header, the request's method, and the URL the agent called, built from our public URL and
 * never from the request's Host, which the caller chooses.
 */
function requestProofOf(
  sent: Extract<SentToken, { kind: "token" }>,
  request: ApiCall,
  publicUrl: string,
): RequestProof | undefined {
  if (sent.scheme !== "DPoP") return undefined;
  return { proof: sent.proof, method: request.method, url: `${publicUrl}${request.path}` };
}

/** The refusal of a failed proof check, in AgentPass's words; undefined for any other failure. */
function proofRefusalOf(
  result: { code: string; error: string },
  refuse: Refusals,
): HttpError | undefined {
  const code = PROOF_CODES.get(result.code);
  if (code === undefined) return undefined;
  return refuse.proof(code, result.code === "dpop_field_invalid" ? TOO_LONG : result.error);
}

/** The 503 of a failure that is no verdict on the token, logged and counted by its cause. */
function unavailable(
  ctx: NotesContext,
  counts: AuthenticationCounts,
  refuse: Refusals,
  cause: string,
): HttpError {
  ctx.reportUnavailable(cause);
  counts.countIdentityFailure(cause);
  return refuse.unavailable;
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
export function callContextOf(request: ApiCall): CallContext {
  return {
    requestId: request.requestId,
    traceparent: request.trace && childTraceparent(request.trace),
    tracestate: request.trace?.state,
  };
}

/** The caller, with the agent AgentPass named (an agent's JWT, or a token an agent minted). */
function withAgent(user: User, agent: NoteAgent | undefined): Caller {
  return agent ? { ...user, agent: { id: agent.id, name: agent.name } } : user;
}

export async function localUser(
  ctx: NotesContext,
  email: string,
  noAccount: HttpError,
): Promise<User> {
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
