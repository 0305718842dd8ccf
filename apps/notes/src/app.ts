import { isDatabaseUnavailable } from "@agentpass/db";
import { allowedMethods, createErrorHandler } from "@agentpass/http";
import { Hono } from "hono";
import type { Logger } from "pino";
import type { NotesContext, NotesEnv } from "./context.ts";
import { requireUser } from "./routes/authenticate.ts";
import { noteRoutes } from "./routes/notes.ts";
import { publicRoutes } from "./routes/public.ts";
import { answerOfRefusal } from "./routes/refusals.ts";
import { tagRoutes } from "./routes/tags.ts";

/** The notes API's HTTP interface. */
export function createNotesApp(ctx: NotesContext, options: { logger: Logger; publicUrl: string }) {
  const app = new Hono<NotesEnv>();
  app.use((c, next) => {
    c.header("X-Content-Type-Options", "nosniff");
    return next();
  });
  const auth = requireUser(ctx);
  for (const path of ["/api/notes", "/api/notes/*", "/api/tags", "/api/tags/*"])
    app.use(path, auth);
  app.route("/", publicRoutes(ctx, options.publicUrl));
  app.route("/", noteRoutes(ctx));
  app.route("/", tagRoutes(ctx));
  // A known path asked with another method is a 405 naming the methods it takes.
  app.notFound((c) => {
    const allow = allowedMethods(app.routes, c.req.path);
    if (allow.length === 0) return c.json({ error: "Not found" }, 404);
    return c.json({ error: "Method not allowed" }, 405, { Allow: allow.join(", ") });
  });
  const answerError = createErrorHandler(options.logger, isDatabaseUnavailable);
  app.onError((error, c) => answerError(answerOfRefusal(error), c));
  return app;
}
