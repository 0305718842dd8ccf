import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { deleteAccount, partnersThatSawEmail } from "../../domain/accounts.ts";
import { listAgentsOfPerson } from "../../domain/agents-of-person.ts";
import { byPerson } from "../web/audit.ts";
import { confirmPage } from "../web/confirm-page.ts";
import { notice } from "../web/flash.ts";
import type { WebGuard, WebRequest } from "../web/guard.ts";
import type { InstallCommands } from "../web/install-commands.ts";
import { csrfField, flashNotice, formatTime, html, renderPage } from "../web/page.ts";
import { htmlAnswer, redirect, withCookies } from "../web/page-answers.ts";
import { keyPages } from "./keys.ts";

/** A person's pages: the front page, their user keys, who learned their email, the account. */
export function accountPages(
  ctx: IdentityContext,
  guard: WebGuard,
  publicUrl: string,
  install: InstallCommands,
): Page[] {
  const front = definePage({
    method: "GET",
    path: "/",
    handle: guard.page((_request, web) =>
      web.session ? redirect("/keys") : htmlAnswer(landingPage(web, publicUrl, install)),
    ),
  });
  const activity = definePage({
    method: "GET",
    path: "/activity",
    handle: guard.signedIn(async (_request, web) => {
      const session = web.session;
      const seen = await partnersThatSawEmail(ctx, session.accountId);
      // Which of the person's agents each partner saw (their own names, shown as data).
      const agentsSeenBy = new Map<string, string[]>();
      for (const host of await listAgentsOfPerson(ctx, session.accountId)) {
        for (const agent of host.agents) {
          for (const { partnerId } of agent.partners) {
            agentsSeenBy.set(partnerId, [...(agentsSeenBy.get(partnerId) ?? []), agent.name]);
          }
        }
      }
      return htmlAnswer(
        renderPage({
          title: "Who has seen your email",
          session,
          csrf: web.csrf,
          body: html`<p>Each partner below verified a session token of yours and so learned your email, <strong>${session.email}</strong>.</p>
${
  seen.length === 0
    ? html`<p class="empty">No partner has verified a token of yours yet.</p>`
    : html`<table><thead><tr><th scope="col">Partner</th><th scope="col" class="optional">First</th><th scope="col">Last</th><th scope="col">Times</th><th scope="col">Agents it saw</th></tr></thead>
<tbody>${seen.map(
        (row) => html`<tr><td>${row.name}${
          row.deletedAt !== null
            ? html` <span class="muted">(deleted ${formatTime(row.deletedAt)})</span>`
            : row.website
              ? html` <a href="${row.website}" rel="noopener noreferrer">${row.website}</a>`
              : ""
        }</td>
<td class="optional">${formatTime(row.firstAt)}</td><td>${formatTime(row.lastAt)}</td><td>${row.count}</td>
<td data-agents="${row.partnerId}">${(agentsSeenBy.get(row.partnerId) ?? []).join(", ") || html`<span class="muted">none</span>`}</td></tr>`,
      )}</tbody></table>`
}`,
        }),
      );
    }),
  });
  const account = definePage({
    method: "GET",
    path: "/account",
    handle: guard.signedIn((_request, web) => {
      const session = web.session;
      return htmlAnswer(
        renderPage({
          title: "Your account",
          session,
          csrf: web.csrf,
          body: html`<div class="card"><p>Signed in as <strong>${session.email}</strong>.</p>
<form method="post" action="/sign-out-everywhere">${csrfField(web.csrf)}
<p><label><input type="checkbox" name="apps" value="yes"> Also disconnect every connected app and device login</label></p>
<button type="submit" class="secondary">Sign out everywhere</button></form>
<p><a href="/account/security">Security log</a>: sign-ins, key changes and approvals on your account.</p></div>
<h2>Delete your account</h2>
<div class="card"><p>Deletes your account, every user key, every partner you own and their keys. Tokens made with them stop verifying at once. This cannot be undone.</p>
<p><a class="button danger" href="/account/delete">Delete account…</a></p></div>`,
        }),
      );
    }),
  });
  const confirmDeletion = definePage({
    method: "GET",
    path: "/account/delete",
    handle: guard.signedIn((_request, web) =>
      confirmPage(web, {
        title: "Delete your account?",
        text: html`The account <strong>${web.session.email}</strong>, its user keys, partners and partner keys are deleted now.`,
        action: "/account/delete",
        button: "Delete account",
        cancel: "/account",
      }),
    ),
  });
  const deletion = definePage({
    method: "POST",
    path: "/account/delete",
    handle: guard.signedIn(async (request, web) => {
      if (web.form.get("confirm") !== "yes") return guard.seeOther(web, "/account/delete");
      await deleteAccount(ctx, web.session.accountId);
      await ctx.audit.record({
        ...byPerson(request, web.session.accountId),
        action: "account.delete",
        outcome: "success",
        subject: { kind: "account", id: web.session.accountId },
      });
      // The front page shows it to this browser, which is no longer signed in.
      const gone = guard.seeOther(
        { browserId: web.browserId, session: null },
        "/",
        notice("ok", "Your account and all its keys are gone."),
      );
      return withCookies(gone, guard.clearedSessionCookie());
    }),
  });
  return [
    front,
    ...keyPages(ctx, guard, publicUrl, install),
    activity,
    account,
    confirmDeletion,
    deletion,
  ];
}

/** What a signed-out visitor of `/` reads: what AgentPass is, for each kind of reader. */
function landingPage(web: WebRequest, publicUrl: string, install: InstallCommands) {
  return renderPage({
    title: "AgentPass: who is behind the agent",
    session: null,
    csrf: web.csrf,
    body: html`${flashNotice(web.flash)}<p>AgentPass lets an AI agent prove, to the services it calls, which person it works for, and tells those services exactly one thing: the person's verified email.</p>
<p><a class="button" href="/sign-in">Sign in or sign up</a> <span class="muted">with your email; no password.</span></p>
<div class="landing">
<section class="card"><h2>For people</h2><p>Keep a user key on your own machine. Your agents trade it for 5-minute session tokens; you see which services learned your email, and revoke a key at any time.</p></section>
<section class="card"><h2>For agents</h2><p>Install the CLI with ${install.cli}. Run <code>agentpass login --url ${publicUrl}</code> once, then send <code>x-session-token: $(agentpass token)</code> with every request to a partner.</p></section>
<section class="card"><h2>For partners</h2><p>Register your API, get a partner key, and ask <code>POST /api/verify</code> who a token belongs to, or use the library: ${install.verify}, or in Python ${install.python}. See the <a href="/docs">API reference</a> and the <a href="/directory">partner directory</a>.</p></section>
</div>`,
  });
}
