import { LRUCache } from "lru-cache";
import type { Needs } from "../context.ts";
import { randomSecret } from "../infra/crypto.ts";
import type { CappedFetchResult } from "../infra/fetch-public-document.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import { displayableClientName } from "./device-login.ts";
import { validRedirectUris } from "./redirect-uris.ts";

/**
 * The OAuth clients AgentPass knows: the built-in CLI, clients registered by RFC 7591, and
 * clients whose id is the URL of their Client ID Metadata Document, fetched within budgets.
 */

/** The `agentpass` CLI: pre-registered, public, device flow and refresh grant. */
export const CLI_CLIENT_ID = "agentpass-cli";

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

/** What looking up a client needs of `OAuthDeps`. */
export type ClientDeps = Pick<OAuthDeps, "fetchDocument" | "clientDocuments" | "documentFetches">;

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

/**
 * Whether a client's name is vouched for: only the built-in CLI's. A name sent to RFC 7591
 * registration or published in a metadata document is the client's own word (the consent page
 * says so, with the document's host); so is a device's.
 */
export function isVouchedClientId(clientId: string): boolean {
  return clientId === CLI_CLIENT_ID;
}
