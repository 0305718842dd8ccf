import { type Answer, definePage, type EndpointRequest, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { agentsSeenByPartner } from "../../domain/agents-of-person.ts";
import { listKeys } from "../../domain/credentials.ts";
import { addPartnerResource, partnerResources, removePartnerResource } from "../../domain/oauth.ts";
import { partnerUsage } from "../../domain/partner-usage.ts";
import {
  checkPartnerSite,
  createPartner,
  deletePartner,
  type FetchDocument,
  findOwnedPartner,
  listOwnedPartners,
  type PartnerFields,
  updatePartner,
} from "../../domain/partners.ts";
import type { Partner } from "../../store/store.ts";
import { byPerson } from "../web/audit.ts";
import { confirmPage } from "../web/confirm-page.ts";
import { notFoundPage } from "../web/error-page.ts";
import { notice } from "../web/flash.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import type { InstallCommands } from "../web/install-commands.ts";
import { keyTable, shownOnce } from "../web/key-table.ts";
import { csrfField, flashNotice, formatTime, html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";
import { siteCheckOutcome, siteSection } from "../web/site-section.ts";
import { usageChart } from "../web/usage-chart.ts";
import { keyRoutes } from "./key-routes.ts";

/**
 * Partner pages: any signed-in account can own partners, their keys and see their usage, prove
 * it controls a partner's website (`fetchDocument` fetches the proof), and delete a partner.
 */
export function partnerPages(
  ctx: IdentityContext,
  guard: WebGuard,
  fetchDocument: FetchDocument,
  publicUrl: string,
  install: InstallCommands,
): Page[] {
  /** The partner of the URL, when the signed-in account owns it. */
  function ownPartner(request: EndpointRequest, web: SignedInRequest): Promise<Partner | null> {
    return findOwnedPartner(ctx, web.session.accountId, request.params.id ?? "");
  }

  function partnerForm(action: string, csrf: string, partner?: Partner) {
    return html`<form method="post" action="${action}" class="card">${csrfField(csrf)}
<label for="partner-name">Name</label>
<input id="partner-name" name="name" type="text" required maxlength="100" value="${partner?.name ?? ""}">
<label for="partner-website">Website</label>
<input id="partner-website" name="website" type="url" maxlength="2048" placeholder="https://" value="${partner?.website ?? ""}">
<label for="partner-description">Description</label>
<textarea id="partner-description" name="description" maxlength="1000" rows="3">${partner?.description ?? ""}</textarea>
<p><label class="inline"><input type="checkbox" name="listed" value="yes" ${partner?.listed ? "checked" : ""}> List in the public partner directory</label></p>
<p><button type="submit">${partner ? "Save" : "Create partner"}</button></p></form>`;
  }

  function fieldsOf(form: URLSearchParams): PartnerFields {
    return {
      name: (form.get("name") ?? "").slice(0, 1000),
      website: (form.get("website") ?? "").slice(0, 4096),
      description: (form.get("description") ?? "").slice(0, 4000),
      listed: form.get("listed") === "yes",
    };
  }

  const invalid = (reason: string) => html`<p class="error" role="alert">${reason}</p>`;

  async function listPage(web: SignedInRequest, error?: string) {
    const partners = await listOwnedPartners(ctx, web.session.accountId);
    return htmlAnswer(
      renderPage({
        title: "Your partners",
        session: web.session,
        csrf: web.csrf,
        body: html`${flashNotice(web.flash)}${error ? invalid(error) : ""}<p>A partner is an API that accepts AgentPass session tokens. It verifies them with a partner key and learns the person's email.</p>
${
  partners.length === 0
    ? html`<p class="empty">You have no partners yet.</p>`
    : html`<ul class="plain">${partners.map((p) => html`<li><a href="/partners/${p.id}">${p.name}</a>${p.listed ? html` <span class="muted">(listed)</span>` : ""}</li>`)}</ul>`
}
<h2>New partner</h2>${partnerForm("/partners", web.csrf)}`,
      }),
      error ? 400 : 200,
    );
  }

  async function partnerPage(web: SignedInRequest, partner: Partner, error?: string) {
    const [keys, usage, site, resources, agents] = await Promise.all([
      listKeys(ctx, "partner", partner.id),
      partnerUsage(ctx, partner.id, 30),
      siteSection(ctx, partner, web.csrf),
      partnerResources(ctx, partner.id),
      agentsSeenByPartner(ctx, partner.id),
    ]);
    const created =
      web.flash?.kind === "new-key"
        ? shownOnce(
            web.flash.key,
            html`<p>Put it in your server's configuration (for example <code>AGENTPASS_PARTNER_KEY</code>), never in client code.</p>`,
          )
        : "";
    return htmlAnswer(
      renderPage({
        title: partner.name,
        session: web.session,
        csrf: web.csrf,
        body: html`${flashNotice(web.flash)}${error ? invalid(error) : ""}${created}${
          partner.suspendedAt === null
            ? ""
            : html`<p class="error" role="alert">Suspended by the operator of this service since ${formatTime(partner.suspendedAt)}: verifications with its keys are refused (403) and the directory does not list it, until the operator reinstates it.</p>`
        }<p>Partner id <code>${partner.id}</code> (agents pass it as <code>--audience</code> to make tokens only you can verify).</p>
<h2>Website verification</h2>${site}
<h2>Usage</h2>${usageChart(usage.counts, usage.days)}
<h2 id="agents-seen">Agents seen</h2>
${
  agents.length === 0
    ? html`<p class="empty">No agent of its own has acted here yet: the people's tokens named none.</p>`
    : html`<table><thead><tr><th scope="col">Person</th><th scope="col">Agent</th><th scope="col">Last seen</th><th scope="col">Times</th></tr></thead>
<tbody>${agents.map(
        (seen) =>
          html`<tr data-agent="${seen.agentId}"><td>${seen.email}</td><td>${seen.agentName} <span class="muted">(its own name)</span></td><td>${formatTime(seen.lastAt)}</td><td>${String(seen.count)}</td></tr>`,
      )}</tbody></table>`
}
<h2>Partner keys</h2>
<p>Your server sends a partner key with each <code>POST /api/verify</code>. Revoking one refuses it on the very next request.</p>
${keyTable(keys, `/partners/${partner.id}/keys`)}
${keys.some((key) => key.revokedAt === null) ? integration(publicUrl, install) : ""}
<form method="post" action="/partners/${partner.id}/keys" class="card">${csrfField(web.csrf)}
<label for="partner-key-name">Key name</label><input id="partner-key-name" name="name" type="text" required maxlength="100" placeholder="production">
<p><button type="submit">Create partner key</button></p></form>
<h2>Resources (OAuth)</h2>
<p>The URLs of your API as OAuth clients name it (<code>resource</code>, RFC 8707): a token asked for one of them is bound to this partner, so only you can verify it. MCP clients ask for your MCP endpoint's URL.</p>
${
  resources.length === 0
    ? html`<p class="empty">No resource URL yet.</p>`
    : html`<ul class="plain">${resources.map(
        (url) =>
          html`<li><code>${url}</code> <form method="post" action="/partners/${partner.id}/resources/remove" class="inline">${csrfField(web.csrf)}<input type="hidden" name="url" value="${url}"><button type="submit" class="secondary small">Remove</button></form></li>`,
      )}</ul>`
}
<form method="post" action="/partners/${partner.id}/resources" class="card">${csrfField(web.csrf)}
<label for="partner-resource">Resource URL</label><input id="partner-resource" name="url" type="url" required maxlength="2000" placeholder="https://api.example.com/mcp">
<p><button type="submit">Add resource</button></p></form>
<h2>Details</h2>${partnerForm(`/partners/${partner.id}`, web.csrf, partner)}
<h2>Delete this partner</h2>
<div class="card"><p>Deletes the partner with its keys and its usage. The people whose email it saw keep that record on their own page. Verifications with its keys are refused from the next request on, and the directory stops listing it. This cannot be undone.</p>
<p><a class="button danger" href="/partners/${partner.id}/delete">Delete partner…</a></p></div>`,
      }),
      error ? 400 : 200,
    );
  }

  /** Wraps the handler of a page about one partner the signed-in account owns; else 404. */
  function ownedPartner(
    handler: (
      web: SignedInRequest,
      partner: Partner,
      request: EndpointRequest,
    ) => Promise<Answer> | Answer,
  ) {
    return guard.signedIn(async (request, web) => {
      const partner = await ownPartner(request, web);
      return partner ? handler(web, partner, request) : notFoundPage(web);
    });
  }

  /** Records what the signed-in person did to a partner of theirs. */
  function audit(
    request: EndpointRequest,
    web: SignedInRequest,
    action:
      | "partner.create"
      | "partner.update"
      | "partner.verify_site"
      | "partner.delete"
      | "partner_resource.add"
      | "partner_resource.remove",
    partner: Partner,
    outcome: "success" | "failure" = "success",
    detail: Record<string, string> = {},
  ) {
    return ctx.audit.record({
      ...byPerson(request, web.session.accountId),
      action,
      outcome,
      subject: { kind: "partner", id: partner.id },
      detail: { name: partner.name, ...detail },
    });
  }

  const list = definePage({
    method: "GET",
    path: "/partners",
    handle: guard.signedIn((_request, web) => listPage(web)),
  });
  const create = definePage({
    method: "POST",
    path: "/partners",
    handle: guard.signedIn(async (request, web) => {
      const created = await createPartner(ctx, {
        ownerAccountId: web.session.accountId,
        ...fieldsOf(web.form),
      });
      if (!created.ok) return listPage(web, `${created.reason}.`);
      await audit(request, web, "partner.create", created.partner);
      return guard.seeOther(web, `/partners/${created.partner.id}`);
    }),
  });
  const show = definePage({
    method: "GET",
    path: "/partners/{id}",
    handle: ownedPartner((web, partner) => partnerPage(web, partner)),
  });
  const update = definePage({
    method: "POST",
    path: "/partners/{id}",
    handle: ownedPartner(async (web, partner, request) => {
      const updated = await updatePartner(ctx, partner, fieldsOf(web.form));
      if (!updated.ok) return partnerPage(web, partner, `${updated.reason}.`);
      await audit(request, web, "partner.update", partner);
      return guard.seeOther(web, `/partners/${partner.id}`, notice("ok", "Saved."));
    }),
  });
  const checkSite = definePage({
    method: "POST",
    path: "/partners/{id}/site-check",
    handle: ownedPartner(async (web, partner, request) => {
      const checked = await checkPartnerSite(ctx, partner, fetchDocument);
      await audit(
        request,
        web,
        "partner.verify_site",
        partner,
        checked.ok ? "success" : "failure",
        checked.ok ? { origin: checked.origin } : { reason: checked.code },
      );
      const outcome = notice(checked.ok ? "ok" : "error", siteCheckOutcome(checked));
      return guard.seeOther(web, `/partners/${partner.id}`, outcome);
    }),
  });
  const addResource = definePage({
    method: "POST",
    path: "/partners/{id}/resources",
    handle: ownedPartner(async (web, partner, request) => {
      const added = await addPartnerResource(ctx, partner.id, web.form.get("url") ?? "");
      if (!added.ok) {
        const reason =
          added.code === "TAKEN"
            ? "Another partner already answers for that URL."
            : "A resource is an https URL (http only on a loopback address) without a query or fragment.";
        return partnerPage(web, partner, reason);
      }
      await audit(request, web, "partner_resource.add", partner, "success", {
        url: (web.form.get("url") ?? "").slice(0, 2000),
      });
      return guard.seeOther(web, `/partners/${partner.id}`, notice("ok", "Resource added."));
    }),
  });
  const removeResource = definePage({
    method: "POST",
    path: "/partners/{id}/resources/remove",
    handle: ownedPartner(async (web, partner, request) => {
      const url = (web.form.get("url") ?? "").slice(0, 2000);
      await removePartnerResource(ctx, partner.id, url);
      await audit(request, web, "partner_resource.remove", partner, "success", { url });
      return guard.seeOther(web, `/partners/${partner.id}`, notice("ok", "Resource removed."));
    }),
  });
  const confirmDeletion = definePage({
    method: "GET",
    path: "/partners/{id}/delete",
    handle: ownedPartner((web, partner) =>
      confirmPage(web, {
        title: "Delete this partner?",
        text: html`The partner <strong>${partner.name}</strong> is deleted now, with its keys and its usage; the people whose email it saw keep that record. Servers verifying with its keys are refused from the next request on, and the directory stops listing it.`,
        action: `/partners/${partner.id}/delete`,
        button: "Delete partner",
        cancel: `/partners/${partner.id}`,
      }),
    ),
  });
  const deletion = definePage({
    method: "POST",
    path: "/partners/{id}/delete",
    handle: ownedPartner(async (web, partner, request) => {
      const confirmation = `/partners/${partner.id}/delete`;
      if (web.form.get("confirm") !== "yes") return guard.seeOther(web, confirmation);
      if (await deletePartner(ctx, web.session.accountId, partner.id)) {
        await audit(request, web, "partner.delete", partner);
      }
      return guard.seeOther(web, "/partners", notice("ok", `Partner ${partner.name} deleted.`));
    }),
  });
  const keys = keyRoutes(ctx, guard, {
    kind: "partner",
    route: "/partners/{id}/keys",
    ownerOf: async (request, web) => {
      const partner = await ownPartner(request, web);
      if (!partner) return null;
      const page = `/partners/${partner.id}`;
      return { id: partner.id, page, keysPath: `${page}/keys` };
    },
    refuseNewKey: async (request, web, message) => {
      const partner = await ownPartner(request, web);
      return partner ? partnerPage(web, partner, message) : notFoundPage(web);
    },
  });
  return [
    list,
    create,
    show,
    update,
    checkSite,
    addResource,
    removeResource,
    confirmDeletion,
    deletion,
    ...keys,
  ];
}

/**
 * How a partner's server uses its key against this service, once it has one: the library's
 * install line and its one call, with this service's own URL (docs/partners.md has the rest:
 * Python, middlewares, what to answer an agent).
 */
function integration(publicUrl: string, install: InstallCommands) {
  return html`<div class="card"><h3>Use it</h3>
<p>In your server's environment: <code>AGENTPASS_URL=${publicUrl}</code> and <code>AGENTPASS_PARTNER_KEY=apk_…</code>. Then, in Node, ${install.verify}:</p>
<pre><code>import { verify } from "@agentpass/verify";
const result = await verify(process.env.AGENTPASS_PARTNER_KEY, sessionToken);
if (result.ok) console.log(result.email); // the person behind the agent</code></pre>
<p>In Python, ${install.python}, then <code>from agentpass import verify</code>, the same call. Token problems are yours to answer with 401; a refused partner key, a rate limit or an unreachable service with 503.</p></div>`;
}
