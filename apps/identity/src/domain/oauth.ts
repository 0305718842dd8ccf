import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Needs } from "../context.ts";
import { randomSecret, sha256 } from "../infra/crypto.ts";
import type { CappedFetchResult } from "../infra/fetch-public-document.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import { displayableClientName } from "./device-login.ts";
import { createGrant } from "./grants.ts";
import { redirectUriMatches, validRedirectUris } from "./redirect-uris.ts";
import { sealFor } from "./session-tokens.ts";

/**
 * AgentPass as an OAuth 2.1 authorization server, for the model it already has: a consent or a
 * device login is a grant (`grants.ts`) whose refresh token mints session tokens (the access
 * tokens), a partner is the resource server (its registered resource URLs name it), and
 * `POST /api/verify` stays as it is beside RFC 7662 introspection. Results are typed:
 * `{ ok: false, error }` carries the RFC's error code.
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
  /**
   * Fetches a client's metadata document, SSRF-safely (`fetchPublicDocument`), at most so many
   * at once in this instance (`capConcurrentFetches`): past that, `busy` without fetching.
   */
  fetchDocument: (url: URL) => Promise<CappedFetchResult>;
  clientDocuments: ClientDocuments;
  /**
   * Fetches of metadata documents, counted before each is sent: per client address of the
   * request that asked for it, and per host name of the document. A cached document costs none.
   */
  documentFetches: { perIp: RateLimiter; perHost: RateLimiter };
  /** The issuer, `PUBLIC_URL`. */
  issuer: string;
}

type ClientDeps = Pick<OAuthDeps, "fetchDocument" | "clientDocuments" | "documentFetches">;

/**
 * What a client id names: the client, or why not. `rate_limited` and `busy` say nothing of the
 * client (its document was not fetched); the request may be tried again later.
 */
export type ClientLookup =
  | { ok: true; client: OAuthClient }
  | { ok: false; code: "unknown_client" }
  | { ok: false; code: "rate_limited"; limit: RateLimitResult }
  | { ok: false; code: "busy" };

/** Why a client could not be looked up now, as a person or a client developer reads it. */
export const CLIENT_LOOKUP_DESCRIPTIONS = {
  unknown_client: "Unknown client",
  rate_limited:
    "Too many client metadata documents fetched for this address or from this host: try again later",
  busy: "Too many client metadata documents are being fetched right now: try again in a moment",
} as const;

type OAuthContext = Needs<"store" | "oauth" | "clock" | "sealingKeys" | "sessionTokenTtlMs">;

/**
 * The client named `clientId`: the CLI, a registered one, or a metadata document's URL. A
 * document not in the cache is fetched only within the budgets of `deps.documentFetches`,
 * counted against `requester` (the client address that asked; undefined where the caller has
 * none, then only the host's budget and the cap on fetches at once bound it).
 */
export async function lookUpClient(
  ctx: Needs<"oauth">,
  deps: ClientDeps,
  clientId: string,
  requester: string | undefined,
): Promise<ClientLookup> {
  if (clientId === CLI_CLIENT_ID) {
    const client: OAuthClient = {
      clientId,
      clientName: "agentpass CLI",
      redirectUris: [],
      kind: "builtin",
    };
    return { ok: true, client };
  }
  if (clientId.startsWith("https://") || clientId.startsWith("http://")) {
    return clientFromDocument(deps, clientId, requester);
  }
  if (clientId.length > 100) return { ok: false, code: "unknown_client" };
  const registered = await ctx.oauth.findClient(clientId);
  return registered
    ? { ok: true, client: { ...registered, kind: "registered" } }
    : { ok: false, code: "unknown_client" };
}

/** `lookUpClient` for callers that only tell a known client from anything else. */
export async function resolveClient(
  ctx: Needs<"oauth">,
  deps: ClientDeps,
  clientId: string,
  requester?: string,
): Promise<OAuthClient | undefined> {
  const found = await lookUpClient(ctx, deps, clientId, requester);
  return found.ok ? found.client : undefined;
}

async function clientFromDocument(
  deps: ClientDeps,
  clientId: string,
  requester: string | undefined,
): Promise<ClientLookup> {
  const known = (client: OAuthClient | null): ClientLookup =>
    client ? { ok: true, client } : { ok: false, code: "unknown_client" };
  const cached = deps.clientDocuments.get(clientId);
  if (cached) return known(cached.client);
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return known(null);
  }
  // The document's URL is its client id, exactly: no fragment, no credentials, a path.
  if (url.hash || url.username || url.password || url.pathname === "/" || url.href !== clientId) {
    return known(null);
  }
  // Counted before the fetch: a refused fetch is never sent, whatever the document would say.
  if (requester !== undefined) {
    const counted = await deps.documentFetches.perIp.take(requester);
    if (!counted.ok) return { ok: false, code: "rate_limited", limit: counted };
  }
  const counted = await deps.documentFetches.perHost.take(url.hostname);
  if (!counted.ok) return { ok: false, code: "rate_limited", limit: counted };
  const fetched = await deps.fetchDocument(url);
  // Not cached: a moment of too many fetches must not make a client unknown for minutes.
  if (!fetched.ok && fetched.reason === "busy") return { ok: false, code: "busy" };
  const client = fetched.ok ? parseClientDocument(clientId, fetched.body) : null;
  deps.clientDocuments.set(clientId, { client });
  return known(client);
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

export type RegistrationResult =
  | { ok: true; client: OAuthClient; issuedAt: number }
  | { ok: false; error: "invalid_redirect_uri" | "invalid_client_metadata"; description: string };

/** The longest client_name a registration may send: what a consent page shows of a name. */
export const MAX_CLIENT_NAME_LENGTH = 100;

/**
 * RFC 7591 dynamic registration of a public client. What is kept is bounded: the metadata's
 * body by the endpoint, the name here, the redirect URIs by `validRedirectUris`; a client no
 * authorization code was issued to is deleted a day after it registered (`store/purge.ts`).
 */
export async function registerClient(
  ctx: Needs<"oauth" | "clock">,
  metadata: Record<string, unknown>,
): Promise<RegistrationResult> {
  const uris = validRedirectUris(metadata.redirect_uris);
  if (!uris) {
    return {
      ok: false,
      error: "invalid_redirect_uri",
      description:
        "redirect_uris must be 1 to 10 https URIs, http URIs on a loopback address, or private-use scheme URIs (RFC 8252)",
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
  if (name !== undefined && (typeof name !== "string" || name.length > MAX_CLIENT_NAME_LENGTH)) {
    return {
      ok: false,
      error: "invalid_client_metadata",
      description: `client_name must be a string of at most ${MAX_CLIENT_NAME_LENGTH} characters`,
    };
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
  deps: ClientDeps,
  params: URLSearchParams,
  /** The client address of the request: a metadata document fetched for it is counted there. */
  requester: string,
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
  },
): Promise<TokenResult> {
  const now = ctx.clock();
  const codeHash = sha256(fields.code);
  const { code, replayed } = await ctx.oauth.takeCode(codeHash, now);
  if (!code) {
    if (replayed) {
      // A code used twice was stolen or replayed: the grant it made ends (section 4.1.2).
      const grantId = await ctx.oauth.keyOfCode(codeHash);
      if (grantId) await ctx.store.revokeKey("user_keys", grantId, now);
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
  const grant = await createGrant(ctx, {
    accountId: code.account_id,
    client: {
      id: code.client_id,
      name: code.client_name ?? code.client_id,
      verified: isVouchedClientId(code.client_id),
    },
    audience: code.partner_id,
    createdFrom: fields.clientAddress,
    rotating: true,
  });
  await ctx.oauth.linkCodeToKey(codeHash, grant.id);
  const sealed = sealFor(ctx, { id: grant.id, ownerId: code.account_id }, code.partner_id);
  return {
    ok: true,
    accessToken: sealed.sessionToken,
    expiresIn: Math.floor(ctx.sessionTokenTtlMs / 1000),
    refreshToken: grant.refreshToken,
  };
}

/**
 * Whether a client's name is vouched for: only the built-in CLI's. A name sent to RFC 7591
 * registration or published in a metadata document is the client's own word (the consent page
 * says so, with the document's host); so is a device's.
 */
export function isVouchedClientId(clientId: string): boolean {
  return clientId === CLI_CLIENT_ID;
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
