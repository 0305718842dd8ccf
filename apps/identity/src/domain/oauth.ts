import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Needs } from "../context.ts";
import { randomSecret, sha256 } from "../infra/crypto.ts";
import type { FetchResult } from "../infra/fetch-public-document.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import { issueKey } from "./credentials.ts";
import { displayableClientName } from "./device-login.ts";
import { displayPrefixOf, generateKey, hashKey, isWellFormedKey } from "./keys.ts";
import { sealFor } from "./session-tokens.ts";

/**
 * AgentPass as an OAuth 2.1 authorization server, for the model it already has: the user key is
 * the refresh token, the session token the access token, a partner the resource server (its
 * registered resource URLs name it), and `POST /api/verify` stays as it is beside RFC 7662
 * introspection. Results are typed: `{ ok: false, error }` carries the RFC's error code.
 */

/** The `agentpass` CLI: pre-registered, public, device flow and refresh grant. */
export const CLI_CLIENT_ID = "agentpass-cli";
/** How long an authorization code lives (RFC 6749 section 4.1.2: at most 10 minutes). */
export const CODE_LIFETIME_MS = 60_000;

export interface OAuthClient {
  clientId: string;
  /** What the client calls itself: unverified, and shown as such. */
  clientName: string;
  /** Exact redirect URIs; empty for the CLI (device flow only). */
  redirectUris: string[];
  kind: "builtin" | "registered" | "metadata_document";
}

/** A Client ID Metadata Document, fetched and cached for a while; null: it is not valid. */
export type ClientDocuments = LRUCache<string, { client: OAuthClient | null }>;

export function createClientDocumentCache(): ClientDocuments {
  return new LRUCache({ max: 1000, ttl: 5 * 60_000 });
}

export interface OAuthDeps {
  /** Fetches a client's metadata document, SSRF-safely (`fetchPublicDocument`). */
  fetchDocument: (url: URL) => Promise<FetchResult>;
  clientDocuments: ClientDocuments;
  /** The issuer, `PUBLIC_URL`. */
  issuer: string;
}

type OAuthContext = Needs<
  "store" | "oauth" | "clock" | "sealingKeys" | "keyUsage" | "sessionTokenTtlMs"
>;

/** The client named `clientId`: the CLI, a registered one, or a metadata document's URL. */
export async function resolveClient(
  ctx: Needs<"oauth">,
  deps: Pick<OAuthDeps, "fetchDocument" | "clientDocuments">,
  clientId: string,
): Promise<OAuthClient | undefined> {
  if (clientId === CLI_CLIENT_ID) {
    return { clientId, clientName: "agentpass CLI", redirectUris: [], kind: "builtin" };
  }
  if (clientId.startsWith("https://") || clientId.startsWith("http://")) {
    return (await clientFromDocument(deps, clientId)) ?? undefined;
  }
  if (clientId.length > 100) return undefined;
  const registered = await ctx.oauth.findClient(clientId);
  return registered && { ...registered, kind: "registered" };
}

async function clientFromDocument(
  deps: Pick<OAuthDeps, "fetchDocument" | "clientDocuments">,
  clientId: string,
): Promise<OAuthClient | null> {
  const cached = deps.clientDocuments.get(clientId);
  if (cached) return cached.client;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return null;
  }
  // The document's URL is its client id, exactly: no fragment, no credentials, a path.
  if (url.hash || url.username || url.password || url.pathname === "/" || url.href !== clientId) {
    return null;
  }
  const fetched = await deps.fetchDocument(url);
  const client = fetched.ok ? parseClientDocument(clientId, fetched.body) : null;
  deps.clientDocuments.set(clientId, { client });
  return client;
}

function parseClientDocument(clientId: string, body: string): OAuthClient | null {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof document !== "object" || document === null) return null;
  const { client_id, client_name, redirect_uris, token_endpoint_auth_method } = document as Record<
    string,
    unknown
  >;
  if (client_id !== clientId) return null;
  if (token_endpoint_auth_method !== undefined && token_endpoint_auth_method !== "none")
    return null;
  const uris = validRedirectUris(redirect_uris);
  if (!uris) return null;
  return {
    clientId,
    clientName: displayableClientName(typeof client_name === "string" ? client_name : clientId),
    redirectUris: uris,
    kind: "metadata_document",
  };
}

/**
 * Redirect URIs a client may register: absolute https URIs, or http on a loopback address (a
 * native app's local server, RFC 8252 section 7.3), without a fragment; at most 10.
 */
export function validRedirectUris(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > 10) return null;
  const uris: string[] = [];
  for (const item of value) {
    if (typeof item !== "string" || item.length > 2000) return null;
    let url: URL;
    try {
      url = new URL(item);
    } catch {
      return null;
    }
    if (url.hash || !isHttpsOrLoopback(url)) {
      return null;
    }
    uris.push(item);
  }
  return uris;
}

export type RegistrationResult =
  | { ok: true; client: OAuthClient; issuedAt: number }
  | { ok: false; error: "invalid_redirect_uri" | "invalid_client_metadata"; description: string };

/** RFC 7591 dynamic registration of a public client. */
export async function registerClient(
  ctx: Needs<"oauth" | "clock">,
  metadata: Record<string, unknown>,
): Promise<RegistrationResult> {
  const uris = validRedirectUris(metadata.redirect_uris);
  if (!uris) {
    return {
      ok: false,
      error: "invalid_redirect_uri",
      description: "redirect_uris must be 1 to 10 https URIs (or http on a loopback address)",
    };
  }
  const method = metadata.token_endpoint_auth_method;
  if (method !== undefined && method !== "none") {
    return {
      ok: false,
      error: "invalid_client_metadata",
      description: 'Only public clients register here: token_endpoint_auth_method must be "none"',
    };
  }
  const name = metadata.client_name;
  if (name !== undefined && typeof name !== "string") {
    return { ok: false, error: "invalid_client_metadata", description: "Invalid client_name" };
  }
  const issuedAt = ctx.clock();
  const client: OAuthClient = {
    clientId: `apc_${randomSecret(18)}`,
    clientName: displayableClientName(name ?? "Unnamed client"),
    redirectUris: uris,
    kind: "registered",
  };
  await ctx.oauth.insertClient({ ...client, createdAt: issuedAt });
  return { ok: true, client, issuedAt };
}

export type ResourceResult = { ok: true } | { ok: false; code: "INVALID_URL" | "TAKEN" };

/**
 * Registers `url` as a resource of a partner (RFC 8707): tokens asked for it are bound to the
 * partner. An absolute https URL (http on a loopback address, for local development) without
 * a query or fragment; one partner per URL.
 */
export async function addPartnerResource(
  ctx: Needs<"oauth" | "clock">,
  partnerId: string,
  url: string,
): Promise<ResourceResult> {
  const resource = canonicalResource(url);
  if (!resource) return { ok: false, code: "INVALID_URL" };
  const added = await ctx.oauth.addResource(partnerId, resource, ctx.clock());
  if (added) return { ok: true };
  return (await ctx.oauth.partnerOfResource(resource)) === partnerId
    ? { ok: true }
    : { ok: false, code: "TAKEN" };
}

export async function removePartnerResource(
  ctx: Needs<"oauth">,
  partnerId: string,
  url: string,
): Promise<void> {
  await ctx.oauth.removeResource(partnerId, url);
}

export function partnerResources(ctx: Needs<"oauth">, partnerId: string): Promise<string[]> {
  return ctx.oauth.resourcesOf(partnerId);
}

function canonicalResource(value: string): string | undefined {
  if (value.length > 2000) return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (!isHttpsOrLoopback(url) || url.hash || url.search || url.username || url.password) {
    return undefined;
  }
  // The URL as a client will send it: no trailing slash on a bare origin.
  return url.pathname === "/" ? url.origin : url.href;
}

/** The partner a `resource` URL names (RFC 8707), or undefined when no partner registered it. */
export async function partnerOfResource(
  ctx: Needs<"oauth">,
  resource: string,
): Promise<string | undefined> {
  const canonical = canonicalResource(resource);
  return canonical ? ctx.oauth.partnerOfResource(canonical) : undefined;
}

export type AuthorizationRequest = {
  client: OAuthClient;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  /** The partner the tokens will be bound to, and the resource URL that named it. */
  resource: { url: string; partnerId: string; partnerName: string } | null;
  scope: string | undefined;
};

export type AuthorizationCheck =
  /** Nothing may be redirected: the client or its redirect URI is unknown (section 4.1.2.1). */
  | { ok: false; redirect: false; description: string }
  /** An error the client learns at its redirect URI. */
  | {
      ok: false;
      redirect: true;
      redirectUri: string;
      state: string | undefined;
      error: "invalid_request" | "unsupported_response_type" | "invalid_target";
      description: string;
    }
  | { ok: true; request: AuthorizationRequest };

/** Checks an authorization request's parameters, in the order RFC 6749 section 4.1.2.1 asks. */
export async function checkAuthorizationRequest(
  ctx: Needs<"oauth" | "store">,
  deps: Pick<OAuthDeps, "fetchDocument" | "clientDocuments">,
  params: URLSearchParams,
): Promise<AuthorizationCheck> {
  const single = (name: string) => {
    const values = params.getAll(name);
    return values.length === 1 ? values[0] : values.length === 0 ? undefined : null;
  };
  const clientId = single("client_id");
  const client = clientId ? await resolveClient(ctx, deps, clientId) : undefined;
  if (!client) return { ok: false, redirect: false, description: "Unknown client" };
  const redirectUri = single("redirect_uri");
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) {
    return {
      ok: false,
      redirect: false,
      description: "The redirect_uri is not one the client registered",
    };
  }
  const state = single("state") ?? undefined;
  const refuse = (
    error: "invalid_request" | "unsupported_response_type" | "invalid_target",
    description: string,
  ) => ({ ok: false, redirect: true, redirectUri, state, error, description }) as const;
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
  return {
    ok: true,
    request: { client, redirectUri, state, codeChallenge: challenge, resource, scope },
  };
}

/** The code a person's consent gives the client, stored only as its hash. */
export async function issueAuthorizationCode(
  ctx: Needs<"oauth" | "clock">,
  request: AuthorizationRequest,
  accountId: string,
): Promise<string> {
  const code = randomSecret();
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
      scope?: string;
    }
  | { ok: false; error: TokenError; description: string }
  | { ok: false; error: "rate_limited"; limit: RateLimitResult };

/** RFC 6749 section 4.1.3 with PKCE (RFC 7636): a code and its verifier for a refresh token. */
export async function redeemAuthorizationCode(
  ctx: OAuthContext,
  fields: {
    code: string;
    redirectUri: string;
    clientId: string;
    verifier: string;
    resource?: string;
  },
): Promise<TokenResult> {
  const now = ctx.clock();
  const codeHash = sha256(fields.code);
  const { code, replayed } = await ctx.oauth.takeCode(codeHash, now);
  if (!code) {
    if (replayed) {
      // A code used twice was stolen or replayed: what it gave stops working (section 4.1.2).
      const keyId = await ctx.oauth.keyOfCode(codeHash);
      if (keyId) await ctx.oauth.revokeLineage(keyId, now);
    }
    return invalidGrant("Unknown, expired or already used code");
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
  if (fields.resource !== undefined) {
    const partnerId = await partnerOfResource(ctx, fields.resource);
    if (!partnerId || partnerId !== code.partner_id) {
      return { ok: false, error: "invalid_target", description: "resource was not authorized" };
    }
  }
  const issued = await issueKey(
    ctx,
    "user",
    code.account_id,
    `OAuth: ${code.client_id}`.slice(0, 100),
    {
      clientId: code.client_id,
      audience: code.partner_id,
      rotating: true,
    },
  );
  if (!issued.ok) return invalidGrant("The client's name cannot name a key");
  await ctx.oauth.linkCodeToKey(codeHash, issued.record.id);
  const sealed = sealFor(ctx, { id: issued.record.id, ownerId: code.account_id }, code.partner_id);
  return {
    ok: true,
    accessToken: sealed.sessionToken,
    expiresIn: Math.floor(ctx.sessionTokenTtlMs / 1000),
    refreshToken: issued.key,
    ...(code.scope ? { scope: code.scope } : {}),
  };
}

/**
 * RFC 6749 section 6: a user key in, a session token out. This is minting: the same limit per
 * key, and for the CLI's keys (which do not rotate) no write. A rotating key (a public client's,
 * from a browser flow) is replaced by a new one at each use; the old one presented again is a
 * replay, and revokes the new ones too.
 */
export async function refresh(
  ctx: OAuthContext,
  fields: { refreshToken: string; clientId: string | undefined; resource?: string },
  perUserKey: RateLimiter,
): Promise<TokenResult> {
  if (!isWellFormedKey("user", fields.refreshToken)) return invalidGrant("Unknown refresh token");
  await ctx.store.beginHotRead();
  const key = await ctx.store.findKeyByHash("user_keys", hashKey(fields.refreshToken));
  if (!key) return invalidGrant("Unknown refresh token");
  const now = ctx.clock();
  if (key.revokedAt !== null) {
    if (key.replacedBy) await ctx.oauth.revokeLineage(key.id, now);
    return invalidGrant("The refresh token has been revoked");
  }
  if (key.clientId && fields.clientId !== key.clientId) {
    return invalidGrant("The refresh token was issued to another client");
  }
  let audience = key.audience ?? null;
  if (fields.resource !== undefined) {
    const partnerId = await partnerOfResource(ctx, fields.resource);
    if (!partnerId || (audience !== null && partnerId !== audience)) {
      return {
        ok: false,
        error: "invalid_target",
        description: "Unknown or unauthorized resource",
      };
    }
    audience = partnerId;
  }
  const limit = await perUserKey.take(key.id);
  if (!limit.ok) return { ok: false, error: "rate_limited", limit };
  const expiresIn = Math.floor(ctx.sessionTokenTtlMs / 1000);
  if (!key.rotating) {
    ctx.keyUsage.record("user_keys", key.id, now);
    const sealed = sealFor(ctx, key, audience);
    return { ok: true, accessToken: sealed.sessionToken, expiresIn };
  }
  const next = generateKey("user");
  const nextId = await ctx.oauth.rotateKey(
    key.id,
    {
      ownerId: key.ownerId,
      name: (await ctx.store.findKeyById("user_keys", key.id))?.name ?? "OAuth",
      displayPrefix: displayPrefixOf(next),
      secretHash: hashKey(next),
      createdAt: now,
      grant: { clientId: key.clientId ?? "", audience: key.audience ?? null, rotating: true },
    },
    now,
  );
  if (!nextId) {
    // Another refresh with the same token won the race: this one is the replay.
    await ctx.oauth.revokeLineage(key.id, now);
    return invalidGrant("The refresh token has been used already");
  }
  const sealed = sealFor(ctx, { id: nextId, ownerId: key.ownerId }, audience);
  return { ok: true, accessToken: sealed.sessionToken, expiresIn, refreshToken: next };
}

/** RFC 7009 for a refresh token: the user key, its successors and every token they made stop at once. */
export async function revokeRefreshToken(
  ctx: Needs<"store" | "oauth" | "clock">,
  token: string,
): Promise<"revoked" | "unknown" | "access_token"> {
  if (token.startsWith("aps_")) return "access_token";
  if (!isWellFormedKey("user", token)) return "unknown";
  const key = await ctx.store.findKeyByHash("user_keys", hashKey(token));
  if (!key) return "unknown";
  await ctx.oauth.revokeLineage(key.id, ctx.clock());
  return "revoked";
}

/** https, or http on a loopback address (a native app's or a developer's own machine). */
function isHttpsOrLoopback(url: URL): boolean {
  const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
  return url.protocol === "https:" || (url.protocol === "http:" && loopback);
}

function invalidGrant(description: string): TokenResult {
  return { ok: false, error: "invalid_grant", description };
}

function s256(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

/** RFC 7636 section 4.1: 43 to 128 unreserved characters; a challenge is 43 base64url. */
const PKCE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
