import type { KeyObject } from "node:crypto";
import { isDatabaseUnavailable } from "@agentpass/db";
import {
  apiDocsEndpoints,
  createApiListener,
  createServiceMetrics,
  type Endpoint,
  healthEndpoints,
  type Listener,
  type Page,
  type ServiceMetrics,
  type TrustProxy,
} from "@agentpass/http";
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import { Counter } from "prom-client";
import type { RateLimitSettings } from "../config.ts";
import type { IdentityContext } from "../context.ts";
import { MAX_BODY_BYTES, rateLimits } from "../domain/limits.ts";
import { createClientDocumentCache, type OAuthDeps } from "../domain/oauth.ts";
import {
  capConcurrentFetches,
  type FetchPolicy,
  fetchPublicDocument,
  PUBLIC_FETCH_LIMITS,
} from "../infra/fetch-public-document.ts";
import type { Mailer } from "../infra/mailer.ts";
import { createRateLimiter, type RateLimitStore } from "../infra/rate-limit.ts";
import { agentAuthEndpoints } from "./api/agent-auth.ts";
import { agentCapabilityEndpoints } from "./api/agent-capabilities.ts";
import { deviceEndpoints } from "./api/device.ts";
import { directoryEndpoint } from "./api/directory.ts";
import { deviceFlow } from "./api/oauth/device-flow.ts";
import { oauthEndpoints } from "./api/oauth/index.ts";
import { sessionTokensEndpoint } from "./api/session-tokens.ts";
import { verifyEndpoint } from "./api/verify.ts";
import { accountPages } from "./pages/account.ts";
import { agentRoutes } from "./pages/agents.ts";
import { connectedAppRoutes } from "./pages/connected-apps.ts";
import { AUTHORIZE_PAGE, consentPages } from "./pages/consent.ts";
import { deviceRoutes } from "./pages/device.ts";
import { directoryRoutes } from "./pages/directory.ts";
import { downloadRoutes, readDownloads } from "./pages/downloads.ts";
import { partnerPages } from "./pages/partners.ts";
import { securityLogPages } from "./pages/security-log.ts";
import { signInPages } from "./pages/sign-in.ts";
import { assetRoutes } from "./web/assets.ts";
import { renderPageError } from "./web/error-page.ts";
import { createWebGuard } from "./web/guard.ts";
import { installCommands } from "./web/install-commands.ts";

/**
 * Why the service is not ready though its database answers (`/readyz`). `shutting_down`: it got
 * SIGTERM and drains. `sealing_key_unwrap_failed`: the database holds a sealing key this
 * instance's secret does not unwrap (made by an instance under another secret), so the tokens
 * it seals fail here.
 */
type NotReadyReason = "shutting_down" | "sealing_key_unwrap_failed";

interface AppOptions {
  ctx: IdentityContext;
  /** Why `/readyz` fails though the database answers (a draining server); unset: never. */
  notReady?: () => NotReadyReason | null;
  logger: Logger;
  publicUrl: string;
  /** Development on loopback (`Config.development`): client documents on private addresses too. */
  development: boolean;
  mailer: Mailer;
  rateLimitStore: RateLimitStore;
  rateLimitSettings: RateLimitSettings;
  /** Proxies trusted to name the client (TRUST_PROXY); per-address limits key on the client. */
  trustProxy: TrustProxy;
  /** Time limit of one fetch of a partner's website; unset: 5 s. Tests shorten it. */
  fetchTimeoutMs?: number;
  /** Seals the pages' flash cookies; the same on every instance (`deriveFlashKey`). */
  flashKey: KeyObject;
  /**
   * The instance's metrics: the router counts every answer, the limiters their refusals. Unset:
   * series of its own that no `/metrics` answers (an app a test builds beside the service's).
   */
  metrics?: ServiceMetrics;
  /** The service's tracer (`startTelemetry`): each request a server span. */
  tracer?: Tracer;
}

/**
 * The identity service's HTTP interface: its API endpoints (each defined once, described by the
 * generated OpenAPI document) and its pages, all served by the one router. It knows the domain
 * only through `ctx`.
 */
export function createApp(options: AppOptions): { listener: Listener; endpoints: Endpoint[] } {
  const { ctx, logger, publicUrl, mailer } = options;
  const limits = rateLimits(options.rateLimitSettings);
  const metrics = options.metrics ?? createServiceMetrics();
  const refusals = new Counter({
    name: "agentpass_rate_limit_refusals_total",
    help: "Requests refused 429 (or their flow's own refusal) past a rate limit, by limiter",
    labelNames: ["limiter"],
    registers: [metrics.registry],
  });
  const limiter = (name: keyof typeof limits) => {
    const refused = refusals.labels(name);
    return createRateLimiter(options.rateLimitStore, {
      name,
      ...limits[name],
      clock: ctx.clock,
      onRefused: () => refused.inc(),
    });
  };
  const badKeysPerIp = limiter("badKeysPerIp");
  const fetchPolicy: FetchPolicy = {
    ...PUBLIC_FETCH_LIMITS,
    timeoutMs: options.fetchTimeoutMs ?? PUBLIC_FETCH_LIMITS.timeoutMs,
    // A service reachable only from its own machine may fetch http:// and private addresses (a
    // partner's website served on a laptop); any other fetches https from public addresses only,
    // so a server others reach never becomes a way into the network it runs in.
    allowPrivateNetwork: options.development,
  };
  const fetchDocument = (url: URL) => fetchPublicDocument(url, fetchPolicy);
  const oauth: OAuthDeps = {
    fetchDocument: capConcurrentFetches(
      fetchDocument,
      options.rateLimitSettings.clientDocumentFetchesAtOnce,
    ),
    clientDocuments: createClientDocumentCache(ctx.clock),
    documentFetches: {
      perIp: limiter("clientDocumentFetchesPerIp"),
      failuresPerHost: limiter("clientDocumentFailuresPerHost"),
      perKnownClient: limiter("clientDocumentRefetchesPerClient"),
    },
    issuer: publicUrl,
  };
  const guard = createWebGuard(ctx, {
    secure: publicUrl.startsWith("https://"),
    flashKey: options.flashKey,
  });

  // One device flow (RFC 8628) behind both its OAuth URLs and the older /api/device/* aliases.
  const deviceLogins = deviceFlow(
    ctx,
    { ...oauth, publicUrl },
    { deviceCodesPerIp: limiter("deviceCodesPerIp") },
  );
  const agentLimits = { registrationsPerIp: limiter("agentRegistrationsPerIp"), badKeysPerIp };
  const api = [
    verifyEndpoint(ctx, { perPartnerKey: limiter("failedVerifiesPerPartnerKey"), badKeysPerIp }),
    sessionTokensEndpoint(ctx, publicUrl, { perUserKey: limiter("mintsPerUserKey"), badKeysPerIp }),
    directoryEndpoint(ctx),
    ...agentAuthEndpoints(ctx, publicUrl, agentLimits),
    ...agentCapabilityEndpoints(ctx, publicUrl, agentLimits),
    ...deviceEndpoints(deviceLogins),
    ...oauthEndpoints(
      ctx,
      { ...oauth, publicUrl, dpop: ctx.dpop },
      {
        perUserKey: limiter("mintsPerUserKey"),
        refreshesPerAccount: limiter("refreshesPerAccount"),
        badKeysPerIp,
        revocationsPerIp: limiter("revocationsPerIp"),
        registrationsPerIp: limiter("clientRegistrationsPerIp"),
      },
      deviceLogins,
    ),
    ...healthEndpoints(
      // The change check re-reads the sealing keys when they changed: readiness sees a key
      // another secret made without waiting for a verify to fail on it.
      () => ctx.store.ping().then(() => ctx.store.beginHotRead()),
      () =>
        options.notReady?.() ??
        (ctx.sealingKeys.keysNotUnwrapped().length > 0 ? "sealing_key_unwrap_failed" : null),
    ),
  ];
  const endpoints = [
    ...api,
    ...apiDocsEndpoints([...api, AUTHORIZE_PAGE], apiDescription(publicUrl)),
  ];

  // The packages' files, read once (scripts/pack.ts writes them); the pages' install lines name them.
  const downloads = readDownloads();
  const install = installCommands(publicUrl, downloads);
  const pages: Page[] = [
    ...directoryRoutes(ctx, guard),
    ...deviceRoutes(ctx, guard, { perAccount: limiter("deviceCodeGuessesPerAccount") }),
    ...signInPages({
      ctx,
      guard,
      mailer,
      limits: {
        perAddress: limiter("signInCodesPerAddress"),
        perIp: limiter("signInCodesPerIp"),
        perRememberedBrowser: limiter("signInCodesPerRememberedBrowser"),
        perIpPastAddressBudget: limiter("signInLongCodesPerIpAndAddress"),
        failuresPerIp: limiter("signInFailuresPerIp"),
      },
      publicUrl,
    }),
    ...accountPages(ctx, guard, publicUrl, install),
    ...connectedAppRoutes(ctx, guard),
    ...agentRoutes(ctx, guard),
    ...securityLogPages(ctx, guard),
    ...partnerPages(ctx, guard, fetchDocument, publicUrl, install),
    ...consentPages(ctx, guard, oauth),
    ...assetRoutes(),
    ...downloadRoutes(downloads),
  ];
  const listener = createApiListener([...endpoints, ...pages], {
    logger,
    maxBodyBytes: MAX_BODY_BYTES,
    trustProxy: options.trustProxy,
    isUnavailable: isDatabaseUnavailable,
    renderPageError,
    metrics,
    ...(options.tracer && { tracer: options.tracer }),
  });
  return { listener, endpoints };
}

/** The OpenAPI document's description of the service, beside its generated paths. */
function apiDescription(publicUrl: string) {
  return {
    info: {
      title: "AgentPass identity service",
      version: "0.1.0",
      description:
        "Agents trade a user key for a 5-minute session token; partners verify the token and learn the person's email. Every refusal is `{ error, code }`: `error` for people, `code` for programs.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: publicUrl }],
    tags: [
      { name: "Partners", description: "A partner verifies an agent's token: the person's email" },
      { name: "Agents", description: "An agent trades its person's user key for session tokens" },
      { name: "Agent Auth", description: "The Agent Auth Protocol: hosts, agents, capabilities" },
      { name: "OAuth", description: "OAuth 2.0: device and code grants, introspection, clients" },
      { name: "Directory", description: "The public list of partners" },
      { name: "Health", description: "Probes for an orchestrator" },
    ],
    components: {
      securitySchemes: {
        partnerKey: {
          type: "http" as const,
          scheme: "bearer",
          description: "A partner key (apk_…)",
        },
        userKey: { type: "http" as const, scheme: "bearer", description: "A user key (apu_…)" },
        hostJwt: {
          type: "http" as const,
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "A host's JWT (Agent Auth Protocol `host+jwt`): EdDSA, `iss` the thumbprint of the host's Ed25519 key, `aud` this issuer, used once",
        },
        agentJwt: {
          type: "http" as const,
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "An agent's JWT (Agent Auth Protocol `agent+jwt`): EdDSA, `iss` its host's thumbprint, `sub` the agent's id, `aud` this issuer, used once",
        },
      },
    },
  };
}
