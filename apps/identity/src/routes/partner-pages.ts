import { type Context, Hono } from "hono";
import type { IdentityContext } from "../context.ts";
import { issueKey, listKeys, revokeKey } from "../credentials.ts";
import { createPartner, type PartnerFields, updatePartner } from "../partners.ts";
import type { Partner } from "../store/store.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import { keyTable, shownOnce } from "../web/key-table.ts";
import { csrfField, html, renderPage } from "../web/page.ts";
import { lastDays, usageChart } from "../web/usage-chart.ts";
import { confirmPage, notFound } from "./account-pages.ts";

type Notice = ReturnType<typeof html>;

/** Partner pages: any signed-in account can own partners, their keys and see their usage. */
export function partnerPages(ctx: IdentityContext, guard: WebGuard) {
  /** The partner of the URL, when the signed-in account owns it. */
  async function ownPartner(c: Context, web: SignedInRequest): Promise<Partner | undefined> {
    const partner = await ctx.store.findPartner(c.req.param("id") ?? "");
    return partner?.ownerAccountId === web.session.accountId ? partner : undefined;
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

  async function listPage(
    c: Context,
    web: SignedInRequest,
    notice?: Notice,
    status: 200 | 400 = 200,
  ) {
    const partners = await ctx.store.listPartnersOwnedBy(web.session.accountId);
    return c.html(
      renderPage({
        title: "Your partners",
        session: web.session,
        csrf: web.csrf,
        body: html`${notice ?? ""}<p>A partner is an API that accepts AgentPass session tokens. It verifies them with a partner key and learns the person's email.</p>
${
  partners.length === 0
    ? html`<p class="empty">You have no partners yet.</p>`
    : html`<ul>${partners.map((p) => html`<li><a href="/partners/${p.id}">${p.name}</a>${p.listed ? html` <span class="muted">(listed)</span>` : ""}</li>`)}</ul>`
}
<h2>New partner</h2>${partnerForm("/partners", web.csrf)}`,
      }),
      status,
    );
  }

  async function partnerPage(
    c: Context,
    web: SignedInRequest,
    partner: Partner,
    notice?: Notice,
    status: 200 | 400 = 200,
  ) {
    // This instance's pending counts first, so a page shows what just happened here.
    await Promise.all([ctx.usage.flush(), ctx.keyUsage.flush()]);
    const days = lastDays(ctx.clock(), 30);
    const [keys, usage] = await Promise.all([
      listKeys(ctx, "partner", partner.id),
      ctx.usageStore.usageOf(partner.id, days[0] ?? ""),
    ]);
    return c.html(
      renderPage({
        title: partner.name,
        session: web.session,
        csrf: web.csrf,
        body: html`${notice ?? ""}<p>Partner id <code>${partner.id}</code> (agents pass it as <code>--audience</code> to make tokens only you can verify).</p>
<h2>Usage</h2>${usageChart(usage, days)}
<h2>Partner keys</h2>
<p>Your server sends a partner key with each <code>POST /api/verify</code>. Revoking one refuses it on the very next request.</p>
${keyTable(keys, `/partners/${partner.id}/keys`, web.csrf)}
<form method="post" action="/partners/${partner.id}/keys" class="card">${csrfField(web.csrf)}
<label for="partner-key-name">Key name</label><input id="partner-key-name" name="name" type="text" required maxlength="100" placeholder="production">
<p><button type="submit">Create partner key</button></p></form>
<h2>Details</h2>${partnerForm(`/partners/${partner.id}`, web.csrf, partner)}`,
      }),
      status,
    );
  }

  const invalid = (reason: string) => html`<p class="error" role="alert">${reason}.</p>`;

  return new Hono()
    .get(
      "/partners",
      guard.signedIn((c, web) => listPage(c, web)),
    )
    .post(
      "/partners",
      guard.signedIn(async (c, web) => {
        const created = await createPartner(ctx, {
          ownerAccountId: web.session.accountId,
          ...fieldsOf(web.form),
        });
        if (!created.ok) return listPage(c, web, invalid(created.reason), 400);
        return c.redirect(`/partners/${created.partner.id}`, 303);
      }),
    )
    .get(
      "/partners/:id",
      guard.signedIn(async (c, web) => {
        const partner = await ownPartner(c, web);
        return partner ? partnerPage(c, web, partner) : notFound(c, web);
      }),
    )
    .post(
      "/partners/:id",
      guard.signedIn(async (c, web) => {
        const partner = await ownPartner(c, web);
        if (!partner) return notFound(c, web);
        const updated = await updatePartner(ctx, partner, fieldsOf(web.form));
        if (!updated.ok) return partnerPage(c, web, partner, invalid(updated.reason), 400);
        return partnerPage(c, web, updated.partner, html`<p class="ok" role="status">Saved.</p>`);
      }),
    )
    .post(
      "/partners/:id/keys",
      guard.signedIn(async (c, web) => {
        const partner = await ownPartner(c, web);
        if (!partner) return notFound(c, web);
        const issued = await issueKey(ctx, "partner", partner.id, web.form.get("name") ?? "");
        if (!issued.ok) {
          return partnerPage(
            c,
            web,
            partner,
            invalid("Give the key a name of 1 to 100 characters"),
            400,
          );
        }
        return partnerPage(
          c,
          web,
          partner,
          shownOnce(
            issued.key,
            html`<p>Put it in your server's configuration (for example <code>AGENTPASS_PARTNER_KEY</code>), never in client code.</p>`,
          ),
        );
      }),
    )
    .post(
      "/partners/:id/keys/:keyId/revoke",
      guard.signedIn(async (c, web) => {
        const partner = await ownPartner(c, web);
        const key =
          partner && (await ctx.store.findKeyById("partner_keys", c.req.param("keyId") ?? ""));
        if (!partner || !key || key.ownerId !== partner.id) return notFound(c, web);
        if (web.form.get("confirm") !== "yes") {
          return confirmPage(c, web, {
            title: "Revoke this partner key?",
            text: html`Verifications with <strong>${key.name}</strong> (<code>${key.displayPrefix}…</code>) get 403 from the next request on.`,
            action: `/partners/${partner.id}/keys/${key.id}/revoke`,
            button: "Revoke partner key",
            cancel: `/partners/${partner.id}`,
          });
        }
        await revokeKey(ctx, "partner", key.id);
        return partnerPage(
          c,
          web,
          partner,
          html`<p class="ok" role="status">Partner key ${key.name} revoked.</p>`,
        );
      }),
    );
}
