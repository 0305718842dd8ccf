import { renderDocsPage } from "@agentpass/http";
import { Hono } from "hono";
import { buildOpenApiDocument } from "../openapi.ts";

/** The OpenAPI document as JSON, and the same rendered as a plain page at /docs. */
export function docsRoutes(publicUrl: string) {
  const document = buildOpenApiDocument(publicUrl);
  const page = renderDocsPage(document, (operation) => {
    const security = JSON.stringify(operation.security ?? []);
    if (security.includes("partnerKey")) return "Authorization: Bearer &lt;partner key&gt;";
    if (security.includes("userKey")) return "Authorization: Bearer &lt;user key&gt;";
    return "none (public)";
  });
  return new Hono()
    .get("/api/openapi.json", (c) => c.json(document))
    .get("/docs", (c) => c.html(page));
}
