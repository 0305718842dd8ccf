import { type Context, Hono } from "hono";
import type { IdentityContext } from "../../context.ts";
import { issueKey, listKeys, revokeKey } from "../../domain/credentials.ts";
import { endAllWebSessions } from "../../domain/web-sessions.ts";
import type { SignedInRequest, WebGuard, WebRequest } from "../web/guard.ts";
import { keyTable, shownOnce } from "../web/key-table.ts";
import { csrfField, formatTime, html, renderPage } from "../web/page.ts";

/** A person's pages: user keys, who learned their email, and the account itself. */
export function accountPages(ctx: IdentityContext, guard: WebGuard, publicUrl: string) {
  async function keysPage(
    c: Context,
    web: SignedInRequest,
    notice?: ReturnType<typeof html>,
    status: 200 | 400 = 200,
  ) {
    const session = web.session;
    await ctx.keyUsage.flush();
    const keys = await listKeys(ctx, "user", session.accountId);
    return c.html(
      renderPage({
        title: "Your user keys",
        session,
        csrf: web.csrf,
        body: html`${notice ?? ""}
<p>A user key lets your agent prove who you are. Keep it on your machine; your agent trades it for
5-minute session tokens with <code>agentpass token</code>.</p>
${keyTable(keys, "/keys", web.csrf)}
<h2>New key</h2>
<form method="post" action="/keys" class="card">${csrfField(web.csrf)}
<label for="key-name">Name (the machine or agent it is for)</label>
<input id="key-name" name="name" type="text" required maxlength="100" placeholder="laptop">
<p><button type="submit">Create key</button></p></form>
<p class="muted">Or let the CLI ask for one: run <code>agentpass login --url ${publicUrl}</code> and approve it here.</p>`,
      }),
      status,
    );
  }

  return new Hono()
    .get(
      "/",
      guard.page((c, web) =>
        web.session ? c.redirect("/keys", 303) : c.html(landingPage(web, publicUrl)),
      ),
    )
    .get(
      "/keys",
      guard.signedIn((c, web) => keysPage(c, web)),
    )
    .post(
      "/keys",
      guard.signedIn(async (c, web) => {
        const issued = await issueKey(
          ctx,
          "user",
          web.session.accountId,
          web.form.get("name") ?? "",
        );
        if (!issued.ok) {
          return keysPage(
            c,
            web,
            html`<p class="error" role="alert">Give the key a name of 1 to 100 characters.</p>`,
            400,
          );
        }
        return keysPage(
          c,
          web,
          shownOnce(
            issued.key,
            html`<p>Save it with the CLI: run <code>agentpass login --with-key --url ${publicUrl}</code> and paste it, then press Ctrl-D.</p>`,
          ),
        );
      }),
    )
    .post(
      "/keys/:id/revoke",
      guard.signedIn(async (c, web) => {
        const session = web.session;
        const key = await ctx.store.findKeyById("user_keys", c.req.param("id") ?? "");
        if (!key || key.ownerId !== session.accountId) return notFound(c, web);
        if (web.form.get("confirm") !== "yes") {
          return confirmPage(c, web, {
            title: "Revoke this key?",
            text: html`Agents using <strong>${key.name}</strong> (<code>${key.displayPrefix}…</code>) stop working at once, and every session token made with it stops verifying.`,
            action: `/keys/${key.id}/revoke`,
            button: "Revoke key",
            cancel: "/keys",
          });
        }
        await revokeKey(ctx, "user", key.id);
        return keysPage(c, web, html`<p class="ok" role="status">Key ${key.name} revoked.</p>`);
      }),
    )
    .get(
      "/activity",
      guard.signedIn(async (c, web) => {
        const session = web.session;
        await ctx.usage.flush();
        const seen = await ctx.usageStore.activityOf(session.accountId);
        return c.html(
          renderPage({
            title: "Who has seen your email",
            session,
            csrf: web.csrf,
            body: html`<p>Each partner below verified a session token of yours and so learned your email, <strong>${session.email}</strong>.</p>
${
  seen.length === 0
    ? html`<p class="empty">No partner has verified a token of yours yet.</p>`
    : html`<table><thead><tr><th scope="col">Partner</th><th scope="col" class="optional">First</th><th scope="col">Last</th><th scope="col">Times</th></tr></thead>
<tbody>${seen.map(
        (
          row,
        ) => html`<tr><td>${row.name}${row.website ? html` <a href="${row.website}" rel="noopener noreferrer">${row.website}</a>` : ""}</td>
<td class="optional">${formatTime(Number(row.firstAt))}</td><td>${formatTime(Number(row.lastAt))}</td><td>${Number(row.count)}</td></tr>`,
      )}</tbody></table>`
}`,
          }),
        );
      }),
    )
    .get(
      "/account",
      guard.signedIn((c, web) => {
        const session = web.session;
        return c.html(
          renderPage({
            title: "Your account",
            session,
            csrf: web.csrf,
            body: html`<div class="card"><p>Signed in as <strong>${session.email}</strong>.</p>
<form method="post" action="/sign-out-everywhere">${csrfField(web.csrf)}<button type="submit" class="secondary">Sign out everywhere</button></form></div>
<h2>Delete your account</h2>
<div class="card"><p>Deletes your account, every user key, every partner you own and their keys. Tokens made with them stop verifying at once. This cannot be undone.</p>
<form method="post" action="/account/delete">${csrfField(web.csrf)}<button type="submit" class="danger">Delete account…</button></form></div>`,
          }),
        );
      }),
    )
    .post(
      "/account/delete",
      guard.signedIn(async (c, web) => {
        const session = web.session;
        if (web.form.get("confirm") !== "yes") {
          return confirmPage(c, web, {
            title: "Delete your account?",
            text: html`The account <strong>${session.email}</strong>, its user keys, partners and partner keys are deleted now.`,
            action: "/account/delete",
            button: "Delete account",
            cancel: "/account",
          });
        }
        await endAllWebSessions(ctx, session.accountId);
        await ctx.store.deleteAccount(session.accountId);
        guard.clearSessionCookie(c);
        return c.html(
          renderPage({
            title: "Account deleted",
            session: null,
            csrf: web.csrf,
            body: html`<p role="status">Your account and all its keys are gone. <a href="/sign-in">Sign up again</a> any time.</p>`,
          }),
        );
      }),
    );
}

/** The second step of a destructive action: says what happens, then posts again with confirm. */
export function confirmPage(
  c: Context,
  web: WebRequest,
  page: {
    title: string;
    text: ReturnType<typeof html>;
    action: string;
    button: string;
    cancel: string;
  },
) {
  return c.html(
    renderPage({
      title: page.title,
      session: web.session,
      csrf: web.csrf,
      body: html`<div class="card"><p>${page.text}</p>
<form method="post" action="${page.action}">${csrfField(web.csrf)}<input type="hidden" name="confirm" value="yes">
<button type="submit" class="danger">${page.button}</button> <a href="${page.cancel}">Cancel</a></form></div>`,
    }),
  );
}

export function notFound(c: Context, web: WebRequest) {
  return c.html(
    renderPage({
      title: "Not found",
      session: web.session,
      csrf: web.csrf,
      body: html`<p>There is nothing here, or it is not yours. <a href="/keys">Back to your keys</a>.</p>`,
    }),
    404,
  );
}

/** What a signed-out visitor of `/` reads: what AgentPass is, for each kind of reader. */
function landingPage(web: WebRequest, publicUrl: string) {
  return renderPage({
    title: "AgentPass: who is behind the agent",
    session: null,
    csrf: web.csrf,
    body: html`<p>AgentPass lets an AI agent prove, to the services it calls, which person it works for, and tells those services exactly one thing: the person's verified email.</p>
<p><a class="button" href="/sign-in">Sign in or sign up</a> <span class="muted">with your email; no password.</span></p>
<div class="landing">
<section class="card"><h2>For people</h2><p>Keep a user key on your own machine. Your agents trade it for 5-minute session tokens; you see which services learned your email, and revoke a key at any time.</p></section>
<section class="card"><h2>For agents</h2><p>Run <code>agentpass login --url ${publicUrl}</code> once, then send <code>x-session-token: $(agentpass token)</code> with every request to a partner.</p></section>
<section class="card"><h2>For partners</h2><p>Register your API, get a partner key, and ask <code>POST /api/verify</code> who a token belongs to, or use <code>@agentpass/verify</code>. See the <a href="/docs">API reference</a> and the <a href="/directory">partner directory</a>.</p></section>
</div>`,
  });
}
