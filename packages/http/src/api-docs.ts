import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { ZodOpenApiObject } from "zod-openapi";
import { defineEndpoint, type Endpoint } from "./endpoint.ts";
import { buildOpenApiDocument, type DocumentedRoute } from "./openapi.ts";

const OPENAPI_PATH = "/api/openapi.json";
const ASSET_CACHE = "public, max-age=86400";

/** Swagger UI's files, read once from its npm package: the reference works offline. */
function swaggerAsset(file: string): Uint8Array {
  const require = createRequire(import.meta.url);
  return readFileSync(require.resolve(`swagger-ui-dist/${file}`));
}

let assets: { css: Uint8Array; bundle: Uint8Array } | undefined;

/**
 * The endpoints that publish a service's API: its OpenAPI document at `/api/openapi.json`,
 * generated from `endpoints` and the other routes clients must know of (public: any origin may
 * read it), and at `/docs` an API reference (Swagger UI from its npm package, no CDN) with every
 * request body, parameter, answer and example.
 */
export function apiDocsEndpoints(
  endpoints: readonly DocumentedRoute[],
  description: Omit<ZodOpenApiObject, "openapi" | "paths">,
): Endpoint[] {
  const document = buildOpenApiDocument(endpoints, description);
  const title = description.info.title;
  assets ??= { css: swaggerAsset("swagger-ui.css"), bundle: swaggerAsset("swagger-ui-bundle.js") };
  const { css, bundle } = assets;
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title.replace(/[<&]/g, "")} — API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<noscript><p>The machine-readable reference is <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a> (OpenAPI 3.1).</p></noscript>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/reference.js"></script>
</body>
</html>`;
  const start = `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(OPENAPI_PATH)}, dom_id: "#reference", deepLinking: true, tryItOutEnabled: false, supportedSubmitMethods: [] });`;
  const file = (path: string, type: string, data: string | Uint8Array, cache = ASSET_CACHE) =>
    defineEndpoint({
      method: "GET",
      path,
      undocumented: true,
      operation: { responses: {} },
      handle: () => ({ status: 200, content: { type, data }, headers: { "Cache-Control": cache } }),
    });
  return [
    defineEndpoint({
      method: "GET",
      path: OPENAPI_PATH,
      public: true,
      undocumented: true,
      operation: { responses: {} },
      handle: () => ({ status: 200, body: document }),
    }),
    file("/docs", "text/html; charset=utf-8", page, "no-cache"),
    file("/docs/swagger-ui.css", "text/css; charset=utf-8", css),
    file("/docs/swagger-ui-bundle.js", "text/javascript; charset=utf-8", bundle),
    file("/docs/reference.js", "text/javascript; charset=utf-8", start),
  ];
}
