import type { Needs } from "../../context.ts";
import {
  isSiteVerified,
  partnerSiteToken,
  type SiteCheckResult,
  siteVerificationUrl,
} from "../../domain/partners.ts";
import { PUBLIC_FETCH_LIMITS } from "../../infra/fetch-public-document.ts";
import type { Partner } from "../../store/store.ts";
import { csrfField, formatTime, html } from "./page.ts";

/** The partner page's section on its website: how to prove it is the partner's, and whether it is. */
export async function siteSection(ctx: Needs<"store">, partner: Partner, csrf: string) {
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

/** What became of a website check, in words its owner can act on. */
export function siteCheckOutcome(checked: SiteCheckResult): string {
  if (checked.ok) return "Your website is verified.";
  const address = checked.url?.href ?? "";
  const host = checked.url?.host ?? "";
  switch (checked.code) {
    case "no_website":
      return "Add your website under Details first.";
    case "token_not_found":
      return `Not verified: ${address} does not hold this partner's token on a line of its own.`;
    case "not_https":
      return "Not verified: AgentPass checks only https websites; change your website to https://.";
    case "blocked_address":
      return `Not verified: ${host} resolves to a private or local address, and AgentPass fetches only public ones.`;
    case "unreachable":
      return `Not verified: could not connect to ${host}.`;
    case "timeout":
      return `Not verified: ${host} did not send the file in time.`;
    case "redirect":
      return `Not verified: ${address} answered with a redirect (status ${checked.status}); AgentPass follows none, so serve the file at exactly this address.`;
    case "not_ok":
      return `Not verified: ${address} answered with status ${checked.status}, not 200.`;
    case "too_large":
      return `Not verified: the file at ${address} is larger than ${PUBLIC_FETCH_LIMITS.maxBytes / 1024} KiB.`;
  }
}
