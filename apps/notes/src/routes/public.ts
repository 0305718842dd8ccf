import { type OpenApiDocument, renderDocsPage } from "@agentpass/http";
import { Hono } from "hono";
import { sql } from "kysely";
import { buildApiIndex, buildOpenApiDocument } from "../api-description.ts";
import type { NotesContext } from "../context.ts";

/** What needs no token: the index, the OpenAPI document, the docs page and health. */
export function publicRoutes(ctx: NotesContext, publicUrl: string) {
  const index = buildApiIndex();
  const document = buildOpenApiDocument(publicUrl);
  const page = renderDocsPage(
    document as unknown as OpenApiDocument,
    () => "x-session-token: $(agentpass token)",
  );
  return new Hono()
    .get("/api", (c) => c.json(index))
    .get("/api/openapi.json", (c) => c.json(document))
    .get("/docs", (c) => c.html(page))
    .get("/healthz", (c) => c.json({ ok: true }))
    .get("/readyz", async (c) => {
      try {
        await sql`SELECT 1`.execute(ctx.store.db);
        return c.json({ ok: true, database: true });
      } catch {
        return c.json({ ok: false, database: false }, 503);
      }
    });
}
