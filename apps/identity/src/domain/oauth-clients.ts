import { LRUCache } from "lru-cache";
import type { Needs } from "../context.ts";
import { randomSecret } from "../infra/crypto.ts";
import type { CappedFetchResult } from "../infra/fetch-public-document.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import type { Clock } from "./clock.ts";
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
  /**
   * `dpop_bound_access_tokens: true` in its registration or document (RFC 9449 section 5.2):
   * its token requests are refused without a DPoP proof.
   */
  dpopBound: boolean;
}

/**
 * What an instance remembers of Client ID Metadata Documents, by its clock. `fetched`: each
 * document fetched lately, valid or not (null), answered without fetching for 5 minutes.
 * `knownGood`: the client ids whose document was valid when last fetched, refetched on their
 * own budget once `fetched` forgets them: only the host's valid documents enter it, so strangers
 * naming made-up URLs can neither fill it nor spend that budget. `failingHosts`: hosts whose
 * budget of failed fetches is spent, with the refusal, until its window ends.
 */
export interface ClientDocuments {
  fetched: LRUCache<string, { client: OAuthClient | null }>;
  knownGood: LRUCache<string, true>;
  failingHosts: LRUCache<string, RateLimitResult>;
}

export function createClientDocumentCache(clock: Clock): ClientDocuments {
  const perf = { now: clock };
  return {
    fetched: new LRUCache({ max: 1000, ttl: 5 * 60_000, perf }),
    knownGood: new LRUCache({ max: 10_000, ttl: 24 * 60 * 60_000, perf }),
    failingHosts: new LRUCache({ max: 10_000, ttl: 60_000, perf }),
  };
}

export interface OAuthDeps {
  /**
   * Fetches a client's metadata document, SSRF-safely (`fetchPublicDocument`), at most so many
   * at once in this instance (`capConcurrentFetches`): past that, `busy` without fetching.
   */
  fetchDocument: (url: URL) => Promise<CappedFetchResult>;
  clientDocuments: ClientDocuments;
  /**
   * Fetches of metadata documents. A document no fetch has found valid yet is counted before it
   * is sent against the client address that asked for it (`perIp`), and, once it turned out not
   * to be a valid document (unreachable, not 200, not JSON, another client id), against its host
   * (`failuresPerHost`): a host past that budget is fetched no new URL until the window ends. A
   * client whose document was valid is refetched on a budget of its own (`perKnownClient`, by
   * client id), which no other URL spends. A cached document costs none.
   */
  documentFetches: {
    perIp: RateLimiter;
    failuresPerHost: RateLimiter;
    perKnownClient: RateLimiter;
  };
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
      dpopBound: false,
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
  const { fetched, knownGood, failingHosts } = deps.clientDocuments;
  const cached = fetched.get(clientId);
  if (cached) return known(cached.client);
  const url = documentUrl(clientId);
  if (!url) return known(null);
  // Counted before the fetch: a refused fetch is never sent, whatever the document would say.
  const counted = knownGood.has(clientId)
    ? await deps.documentFetches.perKnownClient.take(clientId)
    : await countUnknownDocument(deps, url.hostname, requester);
  if (!counted.ok) return { ok: false, code: "rate_limited", limit: counted };
  const result = await deps.fetchDocument(url);
  // Not cached: a moment of too many fetches must not make a client unknown for minutes.
  if (!result.ok && result.reason === "busy") return { ok: false, code: "busy" };
  const client = result.ok ? parseClientDocument(clientId, result.body) : null;
  fetched.set(clientId, { client });
  if (client) {
    knownGood.set(clientId, true);
  } else {
    knownGood.delete(clientId);
    // The host's last failure in its budget closes it: no new URL of it is fetched until then.
    const failures = await deps.documentFetches.failuresPerHost.take(url.hostname);
    if (failures.remaining === 0) {
      const ttl = failures.resetSeconds * 1000;
      failingHosts.set(url.hostname, { ...failures, ok: false }, { ttl });
    }
  }
  return known(client);
}

function known(client: OAuthClient | null): ClientLookup {
  return client ? { ok: true, client } : { ok: false, code: "unknown_client" };
}

/** The URL a client id names, if it may be a document's: no fragment, no credentials, a path. */
function documentUrl(clientId: string): URL | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return null;
  }
  if (url.hash || url.username || url.password || url.pathname === "/" || url.href !== clientId) {
    return null;
  }
  return url;
}

/**
 * The budgets a URL no fetch has found valid spends: the asking address's, and none while its
 * host's failures are past their budget (this instance learnt it at the failure that spent it).
 */
async function countUnknownDocument(
  deps: ClientDeps,
  host: string,
  requester: string | undefined,
): Promise<RateLimitResult> {
  const { failingHosts } = deps.clientDocuments;
  const failing = failingHosts.get(host);
  if (failing) {
    const left = Math.max(1, Math.ceil(failingHosts.getRemainingTTL(host) / 1000));
    return { ...failing, resetSeconds: left };
  }
  if (requester === undefined) return { ok: true, limit: 0, remaining: 0, resetSeconds: 1 };
  return deps.documentFetches.perIp.take(requester);
}

function parseClientDocument(clientId: string, body: string): OAuthClient | null {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof document !== "object" || document === null) return null;
  const {
    client_id,
    client_name,
    redirect_uris,
    token_endpoint_auth_method,
    dpop_bound_access_tokens,
  } = document as Record<string, unknown>;
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
    dpopBound: dpop_bound_access_tokens === true,
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
  const bound = metadata.dpop_bound_access_tokens;
  if (bound !== undefined && typeof bound !== "boolean") {
    return {
      ok: false,
      error: "invalid_client_metadata",
      description: "dpop_bound_access_tokens must be a boolean",
    };
  }
  const issuedAt = ctx.clock();
  const client: OAuthClient = {
    clientId: `apc_${randomSecret(18)}`,
    clientName: displayableClientName(name ?? "Unnamed client"),
    redirectUris: uris,
    kind: "registered",
    dpopBound: bound === true,
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
