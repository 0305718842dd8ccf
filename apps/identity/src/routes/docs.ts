import { renderDocsPage } from "@agentpass/http";
import { Hono } from "hono";
import { buildOpenApiDocument } from "../openapi.ts";

/** The OpenAPI document as JSON, and the same rendered as a plain page at /docs. */
export function docsRoutes(publicUrl: string) {
  const document = buildOpenApiDocument(publicUrl);
  const page = renderDocsPage(document, (operation) =>
    JSON.stringify(operation.security).includes("partnerKey")
      ? "Authorization: Bearer &lt;partner key&gt;"
      : "Authorization: Bearer &lt;user key&gt;",
  );
  return new Hono()
    .get("/api/openapi.json", (c) => c.json(document))
    .get("/docs", (c) => c.html(page));
}
