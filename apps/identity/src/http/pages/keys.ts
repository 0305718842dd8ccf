import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { listAgentsOfPerson } from "../../domain/agents-of-person.ts";
import { listKeys } from "../../domain/credentials.ts";
import { listConnectedApps } from "../../domain/grants.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import type { InstallCommands } from "../web/install-commands.ts";
import { keyTable, shownOnce } from "../web/key-table.ts";
import { csrfField, flashNotice, html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";
import { agentsSection } from "./agents.ts";
import { connectedAppsSection } from "./connected-apps.ts";
import { keyRoutes } from "./key-routes.ts";

/**
 * A person's user keys (the list, and creating, renaming and revoking one) and below them their
 * connected apps (`connected-apps.ts`) and their agents by host (`agents.ts`).
 */
export function keyPages(
  ctx: IdentityContext,
  guard: WebGuard,
  publicUrl: string,
  install: InstallCommands,
): Page[] {
  async function keysPage(web: SignedInRequest, error?: string) {
    const keys = await listKeys(ctx, "user", web.session.accountId);
    const apps = await listConnectedApps(ctx, web.session.accountId);
    const hosts = await listAgentsOfPerson(ctx, web.session.accountId);
    const created =
      web.flash?.kind === "new-key"
        ? shownOnce(
            web.flash.key,
            html`<p>Save it with the CLI: run <code>agentpass login --with-key --url ${publicUrl}</code> and paste it, then press Ctrl-D.</p>`,
          )
        : "";
    return htmlAnswer(
      renderPage({
        title: "Your user keys",
        session: web.session,
        csrf: web.csrf,
        body: html`${flashNotice(web.flash)}${created}
<p>A user key lets your agent prove who you are. Keep it on your machine; your agent trades it for
5-minute session tokens with <code>agentpass token</code>.</p>
<p id="keys-bearer">A key made here is a bearer key: whoever copies it can use it until you revoke it.
The session tokens your agent mints with it are bound to a key the agent keeps when it asks with a DPoP proof.
Whether a connected app's tokens are bound is shown under <a href="#connected-apps">Connected apps</a>.</p>
${keyTable(keys, "/keys")}
<h2>New key</h2>
<form method="post" action="/keys" class="card">${csrfField(web.csrf)}
<label for="key-name">Name (the machine or agent it is for)</label>
<input id="key-name" name="name" type="text" required maxlength="100" placeholder="laptop" ${error ? html`aria-describedby="key-name-error" aria-invalid="true"` : ""}>
${error ? html`<p id="key-name-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Create key</button></p></form>
<p class="muted">Or let the CLI ask for one: install it with ${install.cli}, run <code>agentpass login --url ${publicUrl}</code> and approve it here.</p>
${connectedAppsSection(apps)}
${agentsSection(ctx, hosts)}`,
      }),
      error ? 400 : 200,
    );
  }

  const keys = definePage({
    method: "GET",
    path: "/keys",
    handle: guard.signedIn((_request, web) => keysPage(web)),
  });
  return [
    keys,
    ...keyRoutes(ctx, guard, {
      kind: "user",
      route: "/keys",
      ownerOf: async (_request, web) => ({
        id: web.session.accountId,
        page: "/keys",
        keysPath: "/keys",
      }),
      refuseNewKey: (_request, web, message) => keysPage(web, message),
    }),
  ];
}
