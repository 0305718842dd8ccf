import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { type DirectoryEntry, listDirectory } from "../../domain/partners.ts";
import type { WebGuard } from "../web/guard.ts";
import { html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";

function directoryCard({ partner, verified, resembles }: DirectoryEntry) {
  return html`<li class="card" data-partner="${partner.id}"><h2>${partner.name}</h2>
${resembles ? html`<p class="error" data-resembles>Warning: this name looks like ${resembles}, a partner with a verified website, but this is not that partner.</p>` : ""}
${partner.description ? html`<p>${partner.description}</p>` : ""}
${partner.website ? html`<p><a href="${partner.website}" rel="noopener noreferrer">${partner.website}</a></p>` : ""}
${verified ? html`<p class="ok" data-verified>Website verified</p>` : html`<p class="muted" data-unverified>Website not verified</p>`}
<p class="muted">Partner id <code>${partner.id}</code></p></li>`;
}

/** The public partner directory page: listed partners only (agents read `GET /api/partners`). */
export function directoryRoutes(ctx: IdentityContext, guard: WebGuard): Page[] {
  const directory = definePage({
    method: "GET",
    path: "/directory",
    handle: guard.page(async (_request, web) => {
      const entries = await listDirectory(ctx);
      return htmlAnswer(
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
  });
  return [directory];
}
