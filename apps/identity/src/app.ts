import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "pino";
import type { IdentityContext } from "./context.ts";
import { createErrorHandler, HttpError } from "./http-error.ts";
import { docsRoutes } from "./routes/docs.ts";
import { healthRoutes } from "./routes/health.ts";
import { sessionTokenRoutes } from "./routes/session-tokens.ts";
import { verifyRoutes } from "./routes/verify.ts";

/** API bodies are small JSON objects; anything larger is refused before it is read. */
export const MAX_BODY_BYTES = 64 * 1024;

export interface AppOptions {
  ctx: IdentityContext;
  logger: Logger;
  publicUrl: string;
}

/** The identity service's HTTP interface. It knows the domain only through `ctx`. */
export function createApp({ ctx, logger, publicUrl }: AppOptions): Hono {
  const app = new Hono();
  app.use(async (c, next) => {
    await next();
    c.header("X-Content-Type-Options", "nosniff");
  });
  app.use(
    "/api/*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new HttpError(413, "Request body too large");
      },
    }),
  );
  app.route("/", verifyRoutes(ctx));
  app.route("/", sessionTokenRoutes(ctx));
  app.route("/", healthRoutes(ctx));
  app.route("/", docsRoutes(publicUrl));
  app.notFound((c) => c.json({ error: "Not found" }, 404));
  app.onError(createErrorHandler(logger));
  return app;
}
