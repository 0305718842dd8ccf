import { html, raw } from "hono/html";

interface Operation {
  summary?: string;
  description?: string;
  security?: Record<string, unknown>[];
  responses: Record<string, { description: string }>;
}

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
}

/**
 * An OpenAPI document rendered as one self-contained page (no scripts, no CDN): every
 * operation with its summary, how to authenticate, and its answers.
 */
export function renderDocsPage(
  document: OpenApiDocument,
  authHint: (operation: Operation) => string,
) {
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      operation,
    })),
  );
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${document.info.title} — API</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:860px;margin:2rem auto;padding:0 1rem;color:#1b1b1f}
code{background:#f2f2f5;padding:.1em .3em;border-radius:4px}
section{border-top:1px solid #ddd;padding:.5rem 0}
.m{font-weight:700;font-family:monospace;margin-right:.5em}
li{margin:.2em 0}
</style>
</head>
<body>
<h1>${document.info.title}</h1>
<p>${document.info.description ?? ""}</p>
<p>Machine-readable: <a href="/api/openapi.json"><code>/api/openapi.json</code></a> (OpenAPI ${document.openapi}).</p>
${operations.map(
  ({ method, path, operation }) => html`<section>
<h2><span class="m">${method}</span><code>${path}</code></h2>
<p>${operation.summary ?? ""}</p>
${operation.security?.length ? html`<p>Authentication: <code>${raw(authHint(operation))}</code></p>` : ""}
<ul>${Object.entries(operation.responses).map(
    ([status, response]) => html`<li><strong>${status}</strong> ${response.description}</li>`,
  )}</ul>
</section>`,
)}
</body>
</html>`;
}
