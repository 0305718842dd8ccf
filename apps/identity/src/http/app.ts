import { type KeyObject, randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isDatabaseUnavailable } from "@agentpass/db";
import {
  allowedMethods,
  answerError,
  apiDocsEndpoints,
  COMMON_ERRORS,
  clientAddressOf,
  createApiListener,
  createErrorHandler,
  type Endpoint,
  type Listener,
  logRequest,
  type TrustProxy,
  UNKNOWN_ROUTE,
} from "@agentpass/http";
import { getRequestListener } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { matchedRoutes } from "hono/route";
import type { Logger } from "pino";
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
import { deviceEndpoints } from "./api/device.ts";
import { directoryEndpoint } from "./api/directory.ts";
import { healthEndpoints } from "./api/health.ts";
import { oauthEndpoints } from "./api/oauth/index.ts";
import { sessionTokensEndpoint } from "./api/session-tokens.ts";
import { verifyEndpoint } from "./api/verify.ts";
import { accountPages } from "./pages/account.ts";
import { connectedAppRoutes } from "./pages/connected-apps.ts";
import { AUTHORIZE_PAGE, consentPages } from "./pages/consent.ts";
import { deviceRoutes } from "./pages/device.ts";
import { directoryRoutes } from "./pages/directory.ts";
import { partnerPages } from "./pages/partners.ts";
import { signInPages } from "./pages/sign-in.ts";
import { FAVICON, SCRIPT, STYLESHEET } from "./web/assets.ts";
import { errorPage, wantsPage } from "./web/error-page.ts";
import { createWebGuard } from "./web/guard.ts";

export interface AppOptions {
  ctx: IdentityContext;
  logger: Logger;
  publicUrl: string;
  mailer: Mailer;
  rateLimitStore: RateLimitStore;
  rateLimitSettings: RateLimitSettings;
  /** Proxies trusted to name the client (TRUST_PROXY); per-address limits key on the client. */
  trustProxy: TrustProxy;
  /** Time limit of one fetch of a partner's website; unset: 5 s. Tests shorten it. */
  fetchTimeoutMs?: number;
  /** Seals the pages' flash cookies; the same on every instance (`deriveFlashKey`). */
  flashKey: KeyObject;
}

/**
 * The identity service's HTTP interface: its API endpoints (each defined once, served by the one
 * API router and described by the generated OpenAPI document), and the pages (Hono) for every
 * other path. It knows the domain only through `ctx`.
 */
export function createApp(options: AppOptions): {
  listener: Listener;
  endpoints: Endpoint[];
  pages: Hono;
} {
  const { ctx, logger, publicUrl, mailer } = options;
  const clientIp = (c: Context) =>
    clientAddressOf(
      options.trustProxy,
      (c.env as { incoming?: IncomingMessage } | undefined)?.incoming,
    );
  const app = new Hono();
  // Headers are set before the handler runs: set on a finished response, they would make the
  // Node adapter rebuild it.
  app.use(async (c, next) => {
    const started = performance.now();
    const requestId = randomUUID();
    c.header("X-Content-Type-Options", "nosniff");
    c.header("X-Request-Id", requestId);
    await next();
    // The route's template, never the path itself: a path may hold anything, a secret included.
    const handler = matchedRoutes(c).findLast((route) => route.method !== "ALL");
    const route = handler?.path ?? UNKNOWN_ROUTE;
    logRequest(logger, { requestId, method: c.req.method, route, status: c.res.status, started });
  });
  const limits = rateLimits(options.rateLimitSettings);
  const limiter = (name: keyof typeof limits) =>
    createRateLimiter(options.rateLimitStore, { name, ...limits[name], clock: ctx.clock });
  const badKeysPerIp = limiter("badKeysPerIp");
  const fetchPolicy: FetchPolicy = {
    ...PUBLIC_FETCH_LIMITS,
    timeoutMs: options.fetchTimeoutMs ?? PUBLIC_FETCH_LIMITS.timeoutMs,
    allowPrivateNetwork: isLocalDevelopment(publicUrl),
  };
  const fetchDocument = (url: URL) => fetchPublicDocument(url, fetchPolicy);
  const oauth: OAuthDeps = {
    fetchDocument: capConcurrentFetches(
      fetchDocument,
      options.rateLimitSettings.clientDocumentFetchesAtOnce,
    ),
    clientDocuments: createClientDocumentCache(),
    documentFetches: {
      perIp: limiter("clientDocumentFetchesPerIp"),
      perHost: limiter("clientDocumentFetchesPerHost"),
    },
    issuer: publicUrl,
  };
  const guard = createWebGuard(ctx, {
    secure: publicUrl.startsWith("https://"),
    flashKey: options.flashKey,
  });

  const api = [
    verifyEndpoint(ctx, { perPartnerKey: limiter("failedVerifiesPerPartnerKey"), badKeysPerIp }),
    sessionTokensEndpoint(ctx, { perUserKey: limiter("mintsPerUserKey"), badKeysPerIp }),
    directoryEndpoint(ctx),
    ...deviceEndpoints(ctx, { publicUrl, perIp: limiter("deviceCodesPerIp") }),
    ...oauthEndpoints(
      ctx,
      { ...oauth, publicUrl },
      {
        perUserKey: limiter("mintsPerUserKey"),
        refreshesPerAccount: limiter("refreshesPerAccount"),
        badKeysPerIp,
        deviceCodesPerIp: limiter("deviceCodesPerIp"),
        revocationsPerIp: limiter("revocationsPerIp"),
        registrationsPerIp: limiter("clientRegistrationsPerIp"),
      },
    ),
    ...healthEndpoints(() => ctx.store.ping()),
  ];
  const endpoints = [
    ...api,
    ...apiDocsEndpoints([...api, AUTHORIZE_PAGE], apiDescription(publicUrl)),
  ];

  app.route("/", directoryRoutes(ctx, guard));
  app.route(
    "/",
    deviceRoutes(ctx, guard, {
      perAccount: limiter("deviceCodeGuessesPerAccount"),
      clientIp,
    }),
  );
  app.route(
    "/",
    signInPages({
      ctx,
      guard,
      mailer,
      limits: {
        perAddress: limiter("signInCodesPerAddress"),
        perIp: limiter("signInCodesPerIp"),
        perRememberedBrowser: limiter("signInCodesPerRememberedBrowser"),
      },
      publicUrl,
      clientIp,
    }),
  );
  app.route("/", accountPages(ctx, guard, publicUrl));
  app.route("/", connectedAppRoutes(ctx, guard));
  app.route("/", partnerPages(ctx, guard, fetchDocument));
  app.route("/", consentPages(ctx, guard, oauth, clientIp));
  const assetHeaders = { "Cache-Control": "public, max-age=3600" };
  app.get("/assets/style.css", (c) =>
    c.body(STYLESHEET, 200, { ...assetHeaders, "Content-Type": "text/css; charset=utf-8" }),
  );
  app.get("/assets/app.js", (c) =>
    c.body(SCRIPT, 200, { ...assetHeaders, "Content-Type": "text/javascript; charset=utf-8" }),
  );
  app.get("/favicon.svg", (c) =>
    c.body(FAVICON, 200, { ...assetHeaders, "Content-Type": "image/svg+xml" }),
  );
  app.get("/favicon.ico", (c) => c.redirect("/favicon.svg", 301));
  // A known path asked with another method is a 405 naming the methods it takes; else a 404.
  // Browsers get a page, API clients JSON.
  app.notFound((c) => {
    const allow = allowedMethods(app.routes, c.req.path);
    const refusal = allow.length > 0 ? COMMON_ERRORS.method_not_allowed : COMMON_ERRORS.not_found;
    if (allow.length > 0) c.header("Allow", allow.join(", "));
    const status = refusal.status as 404 | 405;
    return wantsPage(c)
      ? c.html(errorPage(status, refusal.message), status)
      : c.json({ error: refusal.message, code: refusal.code }, status);
  });
  const answerJson = createErrorHandler(logger, isDatabaseUnavailable);
  app.onError((error, c) => {
    if (!wantsPage(c)) return answerJson(error, c);
    const answer = answerError(
      error,
      logger,
      { method: c.req.method, path: c.req.path },
      isDatabaseUnavailable,
    );
    for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
    const message = answer.body.requestId
      ? `${answer.body.error} (request id ${answer.body.requestId})`
      : String(answer.body.error);
    return c.html(errorPage(answer.status, message), answer.status as 500);
  });
  const listener = createApiListener(endpoints, {
    logger,
    maxBodyBytes: MAX_BODY_BYTES,
    trustProxy: options.trustProxy,
    isUnavailable: isDatabaseUnavailable,
    fallback: getRequestListener(app.fetch) as Listener,
  });
  return { listener, endpoints, pages: app };
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
    components: {
      securitySchemes: {
        partnerKey: {
          type: "http" as const,
          scheme: "bearer",
          description: "A partner key (apk_…)",
        },
        userKey: { type: "http" as const, scheme: "bearer", description: "A user key (apu_…)" },
      },
    },
  };
}

/**
 * Development: a service whose public URL is plain http on a loopback host can only be reached
 * from its own machine, so it may fetch http:// and private addresses (a partner's website
 * served on a laptop). Any other public URL, https or not, fetches https from public addresses
 * only: a server reachable by others never becomes a way into the network it runs in.
 */
function isLocalDevelopment(publicUrl: string): boolean {
  const url = URL.parse(publicUrl);
  if (url?.protocol !== "http:") return false;
  return (
    url.hostname === "localhost" ||
    url.hostname.endsWith(".localhost") ||
    url.hostname === "[::1]" ||
    /^127\.\d+\.\d+\.\d+$/.test(url.hostname)
  );
}
