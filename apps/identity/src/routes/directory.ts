import { Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import type { Partner } from "../store/store.ts";
import type { WebGuard } from "../web/guard.ts";
import { html, renderPage } from "../web/page.ts";

export const DirectoryResponse = z.object({
  partners: z.array(
    z.object({
      id: z.string().describe("Partner id: an agent passes it as the token audience"),
      name: z.string(),
      description: z.string().nullable(),
      website: z.string().nullable(),
    }),
  ),
});

function publicFields(partner: Partner) {
  return {
    id: partner.id,
    name: partner.name,
    description: partner.description,
    website: partner.website,
  };
}

/** The public partner directory: listed partners only, as a page and as JSON for agents. */
export function directoryRoutes(ctx: IdentityContext, guard: WebGuard) {
  return new Hono()
    .get("/api/partners", async (c) => {
      const partners = await ctx.store.listListedPartners();
      return c.json({ partners: partners.map(publicFields) }, 200, {
        "Cache-Control": "public, max-age=60",
        "Access-Control-Allow-Origin": "*",
      });
    })
    .get(
      "/directory",
      guard.page(async (c, web) => {
        const partners = await ctx.store.listListedPartners();
        return c.html(
          renderPage({
            title: "Partner directory",
            session: web.session,
            csrf: web.csrf,
            body: html`<p>These services accept AgentPass: your agent can use them as you, and each learns only your verified email. Agents can read the same list as JSON at <a href="/api/partners"><code>/api/partners</code></a>.</p>
${
  partners.length === 0
    ? html`<p class="empty">No partner is listed yet.</p>`
    : html`<ul class="directory">${partners.map(
        (p) => html`<li class="card"><h2>${p.name}</h2>
${p.description ? html`<p>${p.description}</p>` : ""}
${p.website ? html`<p><a href="${p.website}" rel="noopener noreferrer">${p.website}</a></p>` : ""}
<p class="muted">Partner id <code>${p.id}</code></p></li>`,
      )}</ul>`
}`,
          }),
        );
      }),
    );
}
