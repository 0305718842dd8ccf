import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { listConnectedApps, revokeConnectedApp } from "../../domain/grants.ts";
import type { ConnectedApp } from "../../store/oauth-store.ts";
import { byPerson } from "../web/audit.ts";
import { confirmPage } from "../web/confirm-page.ts";
import { notFoundPage } from "../web/error-page.ts";
import { notice } from "../web/flash.ts";
import type { WebGuard } from "../web/guard.ts";
import { formatTime, html } from "../web/page.ts";

/**
 * A person's connected apps, on `/keys`: each grant once (a consent, an approved device login),
 * however often its client refreshes, with a revoke that confirms and ends every token of the
 * grant on the next request anywhere.
 */
export function connectedAppsSection(apps: ConnectedApp[]) {
  const rows = apps.map(
    (app) => html`<tr data-grant="${app.id}"><td>${appName(app)}</td>
<td>${app.partnerName ?? html`<span class="muted">any partner</span>`}</td>
<td class="optional">${formatTime(app.createdAt)}${app.createdFrom ? html`<br><span class="muted">from ${app.createdFrom}</span>` : ""}</td>
<td>${formatTime(app.lastUsedAt)}</td>
${bindingCell(app.dpopJkt)}
<td class="actions"><a class="button danger" href="/connected-apps/${app.id}/revoke" aria-label="Revoke ${app.clientName}">Revoke</a></td></tr>`,
  );
  return html`<h2 id="connected-apps">Connected apps</h2>
<p>Apps and devices you let act for you: each keeps working, refreshing its own tokens, until you revoke it here.
An app bound to a key (DPoP) signs every use with a private key it keeps, so its tokens copied elsewhere open nothing;
a bearer app's tokens work for whoever holds them.</p>
${
  apps.length === 0
    ? html`<p class="empty">No connected apps.</p>`
    : html`<table id="connected-apps-table"><thead><tr><th scope="col">App</th><th scope="col">For</th><th scope="col" class="optional">Connected</th><th scope="col">Last used</th><th scope="col">Tokens</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table>`
}`;
}

/** The confirmation and the revocation of one connected app of the signed-in account. */
export function connectedAppRoutes(ctx: IdentityContext, guard: WebGuard): Page[] {
  async function findApp(accountId: string, grantId: string) {
    const apps = await listConnectedApps(ctx, accountId);
    return apps.find((app) => app.id === grantId);
  }

  const path = "/connected-apps/{grantId}/revoke";
  const confirmRevocation = definePage({
    method: "GET",
    path,
    handle: guard.signedIn(async (request, web) => {
      const app = await findApp(web.session.accountId, request.params.grantId ?? "");
      if (!app) return notFoundPage(web);
      return confirmPage(web, {
        title: "Revoke this app?",
        text: html`${appName(app)} stops working at once: its tokens stop verifying and it cannot refresh them. To use it again, connect it again.`,
        action: `/connected-apps/${app.id}/revoke`,
        button: "Revoke app",
        cancel: "/keys#connected-apps",
      });
    }),
  });
  const revocation = definePage({
    method: "POST",
    path,
    handle: guard.signedIn(async (request, web) => {
      const grantId = request.params.grantId ?? "";
      const confirmation = `/connected-apps/${grantId}/revoke`;
      const app = await findApp(web.session.accountId, grantId);
      if (!app) return notFoundPage(web);
      if (web.form.get("confirm") !== "yes") return guard.seeOther(web, confirmation);
      if (await revokeConnectedApp(ctx, web.session.accountId, app.id)) {
        await ctx.audit.record({
          ...byPerson(request, web.session.accountId),
          action: "grant.revoke",
          outcome: "success",
          subject: { kind: "grant", id: app.id },
          detail: { clientId: app.clientId, clientName: app.clientName },
        });
      }
      return guard.seeOther(web, "/keys", notice("ok", `${app.clientName} revoked.`));
    }),
  });
  return [confirmRevocation, revocation];
}

/** The client's name, marked when it is the client's own word rather than vouched for. */
function appName(app: ConnectedApp) {
  const client =
    app.clientId.startsWith("https://") && URL.canParse(app.clientId)
      ? new URL(app.clientId).host
      : app.clientId;
  return html`<strong>${app.clientName}</strong>${app.clientVerified ? "" : html` <span class="muted">(name not verified)</span>`}<br><span class="muted">${client}</span>`;
}

/**
 * Whether a grant's tokens are bound to a key (RFC 9449): the key named by the start of its
 * thumbprint, enough for a person to tell two keys apart, or said plainly to be bearer tokens.
 */
function bindingCell(jkt: string | null) {
  if (jkt === null) return html`<td data-binding="bearer">Bearer (not bound)</td>`;
  return html`<td data-binding="dpop">Bound to a key (DPoP)<br><span class="muted">key SHA-256 thumbprint <code>${jkt.slice(0, 8)}…</code></span></td>`;
}
