import { createHash } from "node:crypto";
import type { Needs } from "../context.ts";
import { randomSecret, sha256 } from "../infra/crypto.ts";
import { createGrant, type GrantSummary, revokeCredential } from "./grants.ts";
import {
  CLIENT_LOOKUP_DESCRIPTIONS,
  type ClientDeps,
  isVouchedClientId,
  lookUpClient,
  type OAuthClient,
} from "./oauth-clients.ts";
import { partnerOfResource } from "./oauth-resources.ts";
import { redirectUriMatches } from "./redirect-uris.ts";
import { sealFor } from "./session-tokens.ts";

/**
 * The authorization code flow (RFC 6749 section 4.1, PKCE required by RFC 7636): a request's
 * parameters checked, the code a person's consent gives the client, and its redemption into a
 * grant (`grants.ts`) whose session token is the access token.
 */

/** How long an authorization code lives (RFC 6749 section 4.1.2: at most 10 minutes). */
export const CODE_LIFETIME_MS = 60_000;

type OAuthContext = Needs<"store" | "oauth" | "clock" | "sealingKeys" | "sessionTokenTtlMs">;

export type AuthorizationRequest = {
  client: OAuthClient;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  /** The partner the tokens will be bound to, and the resource URL that named it. */
  resource: { url: string; partnerId: string; partnerName: string } | null;
  scope: string | undefined;
  /** RFC 9449 section 10: the thumbprint of the only key the code may be redeemed with. */
  dpopJkt: string | null;
};

export type AuthorizationCheck =
  /**
   * Nothing may be redirected: the client or its redirect URI is unknown (section 4.1.2.1), or
   * nobody vouched for the client (`client`: which one, to show the person).
   */
  | { ok: false; redirect: false; description: string; client?: OAuthClient }
  /** An error a vouched-for client learns at its redirect URI. */
  | {
      ok: false;
      redirect: true;
      redirectUri: string;
      state: string | undefined;
      error: "invalid_request" | "unsupported_response_type" | "invalid_target";
      description: string;
    }
  | { ok: true; request: AuthorizationRequest };

/**
 * Checks an authorization request's parameters, in the order RFC 6749 section 4.1.2.1 asks.
 * An error goes back to the redirect URI only for a client someone vouched for: the operator
 * (`isVouchedClientId`) or the person, by a grant they gave it. Anyone may register a client or
 * publish a document naming any redirect URI, so redirecting their errors unseen would make
 * AgentPass's domain an open redirector (RFC 9700 section 4.11.2): those are shown instead.
 */
export async function checkAuthorizationRequest(
  ctx: Needs<"oauth" | "store">,
  deps: ClientDeps,
  params: URLSearchParams,
  /** The client address of the request: a metadata document fetched for it is counted there. */
  requester: string,
  /** The signed-in person the request is for. */
  accountId: string,
): Promise<AuthorizationCheck> {
  const single = (name: string) => {
    const values = params.getAll(name);
    return values.length === 1 ? values[0] : values.length === 0 ? undefined : null;
  };
  const clientId = single("client_id");
  const found = clientId
    ? await lookUpClient(ctx, deps, clientId, requester)
    : ({ ok: false, code: "unknown_client" } as const);
  if (!found.ok) {
    return { ok: false, redirect: false, description: CLIENT_LOOKUP_DESCRIPTIONS[found.code] };
  }
  const { client } = found;
  const redirectUri = single("redirect_uri");
  if (!redirectUri || !redirectUriMatches(client.redirectUris, redirectUri)) {
    return {
      ok: false,
      redirect: false,
      description: "The redirect_uri is not one the client registered",
    };
  }
  const state = single("state") ?? undefined;
  const refuse = async (
    error: "invalid_request" | "unsupported_response_type" | "invalid_target",
    description: string,
  ): Promise<AuthorizationCheck> =>
    (await isVouchedFor(ctx, client, accountId))
      ? { ok: false, redirect: true, redirectUri, state, error, description }
      : { ok: false, redirect: false, description, client };
  if (single("state") === null) return refuse("invalid_request", "state is repeated");
  const responseType = single("response_type");
  if (responseType !== "code") {
    return refuse("unsupported_response_type", 'Only response_type "code" is supported');
  }
  const challenge = single("code_challenge");
  if (single("code_challenge_method") !== "S256" || !challenge || !PKCE_CHALLENGE.test(challenge)) {
    return refuse("invalid_request", "PKCE is required: code_challenge with method S256");
  }
  const resources = params.getAll("resource");
  if (resources.length > 1) return refuse("invalid_target", "One resource at a time");
  let resource: AuthorizationRequest["resource"] = null;
  if (resources.length === 1) {
    const url = resources[0] as string;
    const partnerId = await partnerOfResource(ctx, url);
    const partner = partnerId ? await ctx.store.findPartner(partnerId) : undefined;
    if (!partner) return refuse("invalid_target", "Unknown resource");
    resource = { url, partnerId: partner.id, partnerName: partner.name };
  }
  const scope = single("scope");
  if (scope === null) return refuse("invalid_request", "scope is repeated");
  const dpopJkt = single("dpop_jkt");
  if (dpopJkt === null || (dpopJkt !== undefined && !JKT.test(dpopJkt))) {
    return refuse("invalid_request", "dpop_jkt must be one SHA-256 JWK thumbprint (RFC 7638)");
  }
  return {
    ok: true,
    request: {
      client,
      redirectUri,
      state,
      codeChallenge: challenge,
      resource,
      scope,
      dpopJkt: dpopJkt ?? null,
    },
  };
}

/** Whether the operator vouched for `client`, or the person did by a grant still in force. */
async function isVouchedFor(
  ctx: Needs<"oauth">,
  client: OAuthClient,
  accountId: string,
): Promise<boolean> {
  if (isVouchedClientId(client.clientId)) return true;
  const grants = await ctx.oauth.listGrants(accountId);
  return grants.some((grant) => grant.clientId === client.clientId);
}

/** The code a person's consent gives the client, stored only as its hash. */
export async function issueAuthorizationCode(
  ctx: Needs<"oauth" | "clock">,
  request: AuthorizationRequest,
  accountId: string,
): Promise<string> {
  const code = randomSecret();
  // A registered client is kept once a code was issued to it; unused ones are purged.
  if (request.client.kind === "registered") {
    await ctx.oauth.markClientUsed(request.client.clientId, ctx.clock());
  }
  await ctx.oauth.insertCode({
    code_hash: sha256(code),
    client_id: request.client.clientId,
    account_id: accountId,
    redirect_uri: request.redirectUri,
    code_challenge: request.codeChallenge,
    partner_id: request.resource?.partnerId ?? null,
    scope: request.scope ?? null,
    expires_at: ctx.clock() + CODE_LIFETIME_MS,
    used_at: null,
    key_id: null,
    client_name: request.client.clientName,
    dpop_jkt: request.dpopJkt,
  });
  return code;
}

export type TokenError =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "invalid_target"
  | "unsupported_grant_type"
  | "authorization_pending"
  | "slow_down"
  | "access_denied"
  | "expired_token";

/** A token response (RFC 6749 section 5.1), or an error (section 5.2) with a description. */
export type TokenResult =
  | {
      ok: true;
      accessToken: string;
      expiresIn: number;
      refreshToken?: string;
    }
  | { ok: false; error: TokenError; description: string };

/**
 * A code's redemption: the tokens and the grant they belong to, or a refusal and, when the code
 * was replayed, the grant the replay revoked (for the audit log; never a token).
 */
type CodeRedemption =
  | (Extract<TokenResult, { ok: true }> & { grant: GrantSummary })
  | (Extract<TokenResult, { ok: false }> & { revokedGrant?: GrantSummary });

/** RFC 6749 section 4.1.3 with PKCE (RFC 7636): a code and its verifier make a grant. */
export async function redeemAuthorizationCode(
  ctx: OAuthContext,
  fields: {
    code: string;
    redirectUri: string;
    clientId: string;
    verifier: string;
    resource?: string;
    /** Where the token request came from: shown to the person with the grant. */
    clientAddress: string;
    /** The thumbprint of the key of the request's DPoP proof; null: none was sent. */
    jkt: string | null;
  },
): Promise<CodeRedemption> {
  const now = ctx.clock();
  const codeHash = sha256(fields.code);
  const { code, replayed } = await ctx.oauth.takeCode(codeHash, now);
  if (!code) {
    const refusal = invalidGrant("Unknown, expired or already used code");
    if (!replayed) return refusal;
    // A code used twice was stolen or replayed: the grant it made ends (section 4.1.2).
    const grantId = await ctx.oauth.keyOfCode(codeHash);
    const revoked = grantId ? await revokeCredential(ctx, grantId) : null;
    return revoked?.kind === "grant" ? { ...refusal, revokedGrant: revoked.grant } : refusal;
  }
  if (code.expires_at <= now) return invalidGrant("Unknown, expired or already used code");
  if (code.client_id !== fields.clientId) {
    return invalidGrant("The code was issued to another client");
  }
  if (code.redirect_uri !== fields.redirectUri) {
    return invalidGrant("redirect_uri differs from the authorization request's");
  }
  if (!PKCE_VERIFIER.test(fields.verifier) || s256(fields.verifier) !== code.code_challenge) {
    return invalidGrant("code_verifier does not match the code_challenge");
  }
  // Section 10: a code bound at the authorization request is redeemed with that key only.
  if (code.dpop_jkt !== null && code.dpop_jkt !== fields.jkt) {
    return invalidGrant("The DPoP proof's key is not the one dpop_jkt bound the code to");
  }
  if (fields.resource !== undefined) {
    const partnerId = await partnerOfResource(ctx, fields.resource);
    if (!partnerId || partnerId !== code.partner_id) {
      return { ok: false, error: "invalid_target", description: "resource was not authorized" };
    }
  }
  const client = {
    id: code.client_id,
    name: code.client_name ?? code.client_id,
    verified: isVouchedClientId(code.client_id),
  };
  const grant = await createGrant(ctx, {
    accountId: code.account_id,
    client,
    audience: code.partner_id,
    createdFrom: fields.clientAddress,
    rotating: true,
    dpopJkt: fields.jkt,
  });
  await ctx.oauth.linkCodeToKey(codeHash, grant.id);
  const owner = { id: grant.id, ownerId: code.account_id };
  const sealed = sealFor(ctx, owner, code.partner_id, fields.jkt);
  return {
    ok: true,
    accessToken: sealed.sessionToken,
    expiresIn: Math.floor(ctx.sessionTokenTtlMs / 1000),
    refreshToken: grant.refreshToken,
    grant: {
      id: grant.id,
      accountId: code.account_id,
      clientId: client.id,
      clientName: client.name,
    },
  };
}

function invalidGrant(description: string): Extract<TokenResult, { ok: false }> {
  return { ok: false, error: "invalid_grant", description };
}

function s256(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

/** RFC 7636 section 4.1: 43 to 128 unreserved characters; a challenge is 43 base64url. */
const PKCE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** A SHA-256 JWK thumbprint, base64url: 43 characters, as a PKCE challenge. */
const JKT = PKCE_CHALLENGE;
