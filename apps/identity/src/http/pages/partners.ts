import { type Context, Hono } from "hono";
import type { IdentityContext } from "../../context.ts";
import { issueKey, listKeys, revokeKey } from "../../domain/credentials.ts";
import {
  checkPartnerSite,
  createPartner,
  type FetchDocument,
  isSiteVerified,
  type PartnerFields,
  partnerSiteToken,
  type SiteCheckResult,
  siteVerificationUrl,
  updatePartner,
} from "../../domain/partners.ts";
import { PUBLIC_FETCH_LIMITS } from "../../infra/fetch-public-document.ts";
import type { Partner } from "../../store/store.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import { keyTable, shownOnce } from "../web/key-table.ts";
import { csrfField, formatTime, html, renderPage } from "../web/page.ts";
import { lastDays, usageChart } from "../web/usage-chart.ts";
import { confirmPage, notFound } from "./account.ts";

type Notice = ReturnType<typeof html>;

/**
 * Partner pages: any signed-in account can own partners, their keys and see their usage, and
 * prove it controls a partner's website (`fetchDocument` fetches the proof).
 */
export function partnerPages(ctx: IdentityContext, guard: WebGuard, fetchDocument: FetchDocument) {
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
    : html`<ul class="plain">${partners.map((p) => html`<li><a href="/partners/${p.id}">${p.name}</a>${p.listed ? html` <span class="muted">(listed)</span>` : ""}</li>`)}</ul>`
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
    const [keys, usage, site] = await Promise.all([
      listKeys(ctx, "partner", partner.id),
      ctx.usageStore.usageOf(partner.id, days[0] ?? ""),
      siteSection(partner, web.csrf),
    ]);
    return c.html(
      renderPage({
        title: partner.name,
        session: web.session,
        csrf: web.csrf,
        body: html`${notice ?? ""}<p>Partner id <code>${partner.id}</code> (agents pass it as <code>--audience</code> to make tokens only you can verify).</p>
<h2>Website verification</h2>${site}
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

  /** How to prove the website is the partner's, and whether it is proven. */
  async function siteSection(partner: Partner, csrf: string) {
    const url = siteVerificationUrl(partner);
    if (url === null) {
      return html`<p id="site-status" class="muted">Add your website under Details to verify it. The directory marks a partner without a verified website.</p>`;
    }
    const token = await partnerSiteToken(ctx, partner);
    const status = isSiteVerified(partner)
      ? html`<p id="site-status" class="ok">Verified: you proved you control <code>${url.origin}</code> (${formatTime(partner.siteVerifiedAt)}).</p>`
      : html`<p id="site-status">Not verified: the directory shows this partner with “website not verified”.</p>`;
    return html`${status}
<ol><li>Publish a plain text file at <code id="site-url">${url.href}</code> holding this line (other lines are ignored): <code id="site-token">${token}</code></li>
<li>Serve it with status 200 at exactly that address: no redirect, at most ${PUBLIC_FETCH_LIMITS.maxBytes / 1024} KiB.</li>
<li>Check it. Changing the website to another origin ends the verification.</li></ol>
<form method="post" action="/partners/${partner.id}/site-check" class="inline">${csrfField(csrf)}<button type="submit">Check now</button></form>`;
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
      "/partners/:id/site-check",
      guard.signedIn(async (c, web) => {
        const partner = await ownPartner(c, web);
        if (!partner) return notFound(c, web);
        const checked = await checkPartnerSite(ctx, partner, fetchDocument);
        const notice = checked.ok
          ? html`<p class="ok" role="status">Your website is verified.</p>`
          : invalid(siteCheckFailure(checked));
        return partnerPage(c, web, (await ctx.store.findPartner(partner.id)) ?? partner, notice);
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

/** What went wrong with a website check, in words its owner can act on. */
function siteCheckFailure(failure: Extract<SiteCheckResult, { ok: false }>): string {
  const address = failure.url?.href ?? "";
  const host = failure.url?.host ?? "";
  switch (failure.code) {
    case "no_website":
      return "Add your website under Details first";
    case "token_not_found":
      return `Not verified: ${address} does not hold this partner's token on a line of its own`;
    case "not_https":
      return "Not verified: AgentPass checks only https websites; change your website to https://";
    case "blocked_address":
      return `Not verified: ${host} resolves to a private or local address, and AgentPass fetches only public ones`;
    case "unreachable":
      return `Not verified: could not connect to ${host}`;
    case "timeout":
      return `Not verified: ${host} did not send the file in time`;
    case "redirect":
      return `Not verified: ${address} answered with a redirect (status ${failure.status}); AgentPass follows none, so serve the file at exactly this address`;
    case "not_ok":
      return `Not verified: ${address} answered with status ${failure.status}, not 200`;
    case "too_large":
      return `Not verified: the file at ${address} is larger than ${PUBLIC_FETCH_LIMITS.maxBytes / 1024} KiB`;
  }
}
