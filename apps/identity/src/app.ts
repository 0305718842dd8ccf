import type { IncomingMessage } from "node:http";
import { isDatabaseUnavailable } from "@agentpass/db";
import {
  allowedMethods,
  answerError,
  clientAddressOf,
  createErrorHandler,
  type FastPath,
  type TrustProxy,
} from "@agentpass/http";
import { type Context, Hono } from "hono";
import type { Logger } from "pino";
import type { RateLimitSettings } from "./config.ts";
import type { IdentityContext } from "./context.ts";
import { createIdentityFastPath } from "./fast-paths.ts";
import {
  type FetchPolicy,
  fetchPublicDocument,
  PUBLIC_FETCH_LIMITS,
} from "./fetch-public-document.ts";
import { rateLimits } from "./limits.ts";
import type { Mailer } from "./mailer.ts";
import { createRateLimiter, type RateLimitStore } from "./rate-limit.ts";
import { accountPages } from "./routes/account-pages.ts";
import { deviceRoutes } from "./routes/device.ts";
import { directoryRoutes } from "./routes/directory.ts";
import { docsRoutes } from "./routes/docs.ts";
import { healthRoutes } from "./routes/health.ts";
import { partnerPages } from "./routes/partner-pages.ts";
import { sessionTokenRoutes } from "./routes/session-tokens.ts";
import { signInPages } from "./routes/sign-in-pages.ts";
import { verifyRoutes } from "./routes/verify.ts";
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
}

/**
 * The identity service's HTTP interface: the Hono app, and the plain `node:http` fast path for
 * `/api/verify` and `/api/session-tokens` that a server puts in front of it. It knows the
 * domain only through `ctx`.
 */
export function createApp(options: AppOptions): { app: Hono; fastPath: FastPath } {
  const { ctx, logger, publicUrl, mailer } = options;
  const clientIp = (c: Context) =>
    clientAddressOf(
      options.trustProxy,
      (c.env as { incoming?: IncomingMessage } | undefined)?.incoming,
    );
  const app = new Hono();
  // Set before the handler runs: changing headers of a finished response would make the Node
  // adapter rebuild it, which costs more than the whole verify.
  app.use((c, next) => {
    c.header("X-Content-Type-Options", "nosniff");
    return next();
  });
  const limits = rateLimits(options.rateLimitSettings);
  const limiter = (name: keyof typeof limits) =>
    createRateLimiter(options.rateLimitStore, { name, ...limits[name], clock: ctx.clock });
  const badKeysPerIp = limiter("badKeysPerIp");
  const guard = createWebGuard(ctx, { secure: publicUrl.startsWith("https://") });

  const verifyLimits = { perPartnerKey: limiter("failedVerifiesPerPartnerKey"), badKeysPerIp };
  const mintLimits = { perUserKey: limiter("mintsPerUserKey"), badKeysPerIp };
  app.route("/", verifyRoutes(ctx, { ...verifyLimits, clientIp }));
  app.route("/", sessionTokenRoutes(ctx, { ...mintLimits, clientIp }));
  app.route("/", healthRoutes(ctx));
  app.route("/", docsRoutes(publicUrl));
  app.route("/", directoryRoutes(ctx, guard));
  app.route(
    "/",
    deviceRoutes(ctx, guard, {
      publicUrl,
      perIp: limiter("deviceCodesPerIp"),
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
  const fetchPolicy: FetchPolicy = {
    ...PUBLIC_FETCH_LIMITS,
    timeoutMs: options.fetchTimeoutMs ?? PUBLIC_FETCH_LIMITS.timeoutMs,
    allowPrivateNetwork: isLocalDevelopment(publicUrl),
  };
  app.route(
    "/",
    partnerPages(ctx, guard, (url) => fetchPublicDocument(url, fetchPolicy)),
  );
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
    const [status, error] = allow.length > 0 ? [405, "Method not allowed"] : [404, "Not found"];
    if (allow.length > 0) c.header("Allow", allow.join(", "));
    return wantsPage(c)
      ? c.html(errorPage(status, error), status as 404 | 405)
      : c.json({ error }, status as 404 | 405);
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
  const fastPath = createIdentityFastPath(
    ctx,
    { verify: verifyLimits, mint: mintLimits, trustProxy: options.trustProxy },
    logger,
  );
  return { app, fastPath };
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
