import { createErrorHandler } from "@agentpass/http";
import { Hono } from "hono";
import type { Logger } from "pino";
import type { IdentityContext } from "./context.ts";
import { docsRoutes } from "./routes/docs.ts";
import { healthRoutes } from "./routes/health.ts";
import { sessionTokenRoutes } from "./routes/session-tokens.ts";
import { verifyRoutes } from "./routes/verify.ts";

export interface AppOptions {
  ctx: IdentityContext;
  logger: Logger;
  publicUrl: string;
}

/** The identity service's HTTP interface. It knows the domain only through `ctx`. */
export function createApp({ ctx, logger, publicUrl }: AppOptions): Hono {
  const app = new Hono();
  // Set before the handler runs: changing headers of a finished response would make the Node
  // adapter rebuild it, which costs more than the whole verify.
  app.use((c, next) => {
    c.header("X-Content-Type-Options", "nosniff");
    return next();
  });
  app.route("/", verifyRoutes(ctx));
  app.route("/", sessionTokenRoutes(ctx));
  app.route("/", healthRoutes(ctx));
  app.route("/", docsRoutes(publicUrl));
  app.notFound((c) => c.json({ error: "Not found" }, 404));
  app.onError(createErrorHandler(logger));
  return app;
}
