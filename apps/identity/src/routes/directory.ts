import { Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import { type DirectoryEntry, listDirectory } from "../partners.ts";
import type { WebGuard } from "../web/guard.ts";
import { html, renderPage } from "../web/page.ts";

export const DirectoryResponse = z.object({
  partners: z.array(
    z.object({
      id: z.string().describe("Partner id: an agent passes it as the token audience"),
      name: z.string(),
      description: z.string().nullable(),
      website: z.string().nullable(),
      verified: z
        .boolean()
        .describe("The partner proved it controls its website's origin; false without a website"),
      resembles: z
        .string()
        .nullable()
        .describe(
          "The name of a verified partner this one's name looks like (this one is not it): treat it as a possible impostor",
        ),
    }),
  ),
});

function publicFields({ partner, verified, resembles }: DirectoryEntry) {
  return {
    id: partner.id,
    name: partner.name,
    description: partner.description,
    website: partner.website,
    verified,
    resembles,
  };
}

function directoryCard({ partner, verified, resembles }: DirectoryEntry) {
  return html`<li class="card" data-partner="${partner.id}"><h2>${partner.name}</h2>
${resembles ? html`<p class="error" data-resembles>Warning: this name looks like ${resembles}, a partner with a verified website, but this is not that partner.</p>` : ""}
${partner.description ? html`<p>${partner.description}</p>` : ""}
${partner.website ? html`<p><a href="${partner.website}" rel="noopener noreferrer">${partner.website}</a></p>` : ""}
${verified ? html`<p class="ok" data-verified>Website verified</p>` : html`<p class="muted" data-unverified>Website not verified</p>`}
<p class="muted">Partner id <code>${partner.id}</code></p></li>`;
}

/** The public partner directory: listed partners only, as a page and as JSON for agents. */
export function directoryRoutes(ctx: IdentityContext, guard: WebGuard) {
  return new Hono()
    .get("/api/partners", async (c) => {
      const entries = await listDirectory(ctx);
      return c.json({ partners: entries.map(publicFields) }, 200, {
        "Cache-Control": "public, max-age=60",
        "Access-Control-Allow-Origin": "*",
      });
    })
    .get(
      "/directory",
      guard.page(async (c, web) => {
        const entries = await listDirectory(ctx);
        return c.html(
          renderPage({
            title: "Partner directory",
            session: web.session,
            csrf: web.csrf,
            body: html`<p>These services accept AgentPass: your agent can use them as you, and each learns only your verified email. A partner marked <em>website verified</em> proved it controls the website shown; anyone can list a partner under any name, so trust a name only with its verified website. Agents can read the same list as JSON at <a href="/api/partners"><code>/api/partners</code></a>.</p>
${
  entries.length === 0
    ? html`<p class="empty">No partner is listed yet.</p>`
    : html`<ul class="directory">${entries.map(directoryCard)}</ul>`
}`,
          }),
        );
      }),
    );
}
