import { Hono } from "hono";
import type { IdentityContext } from "../../context.ts";
import { revokeAllConnectedApps } from "../../domain/grants.ts";
import {
  pendingSignInAddress,
  redeemSignInCode,
  redeemSignInLink,
  requestSignInCode,
  type SignInDeps,
} from "../../domain/sign-in.ts";
import { endAllWebSessions, endWebSession, startWebSession } from "../../domain/web-sessions.ts";
import type { Mailer } from "../../infra/mailer.ts";
import { safeNext, type WebGuard, type WebRequest } from "../web/guard.ts";
import { csrfField, html, renderPage } from "../web/page.ts";

export interface SignInPagesOptions {
  ctx: IdentityContext;
  guard: WebGuard;
  mailer: Mailer;
  limits: Pick<SignInDeps, "perAddress" | "perIp" | "perRememberedBrowser">;
  publicUrl: string;
  clientIp: (c: import("hono").Context) => string;
}

/**
 * Sign-up and sign-in, one flow: an email gets a 6-digit code and a one-click link, redeemable
 * only in the browser that asked. Every address gets the same answer.
 */
export function signInPages({
  ctx,
  guard,
  mailer,
  limits,
  publicUrl,
  clientIp,
}: SignInPagesOptions) {
  const deps: SignInDeps = { ctx, mailer, ...limits, publicUrl };

  function emailForm(web: WebRequest, next: string, error = "", email = "") {
    return renderPage({
      title: "Sign in",
      session: web.session,
      csrf: web.csrf,
      body: html`<div class="card">
<p>New or returning, it is the same: enter your email and we send you a code.</p>
<form method="post" action="/sign-in">
${csrfField(web.csrf)}<input type="hidden" name="next" value="${next}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" required maxlength="320" value="${email}" ${error ? html`aria-describedby="email-error" aria-invalid="true"` : ""} autofocus>
${error ? html`<p id="email-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Send me a code</button></p>
</form></div>`,
    });
  }

  async function codeForm(web: WebRequest, next: string, error = "") {
    // Only to the browser that asked: the address it typed, as the code went to it.
    const sentTo = await pendingSignInAddress(ctx, web.browserId);
    return renderPage({
      title: "Enter your code",
      session: web.session,
      csrf: web.csrf,
      body: html`<div class="card">
<p>If ${sentTo ? html`<strong id="sent-to">${sentTo}</strong>` : "the address"} can receive mail, a 6-digit code and a sign-in link are on their way. They work for 10 minutes, in this browser only.</p>
${mailer.logsInstead ? html`<p class="warning" role="note">Development: no mail is sent (SMTP_URL is not set). The code is in the identity service's log.</p>` : ""}
<form method="post" action="/sign-in/code">
${csrfField(web.csrf)}<input type="hidden" name="next" value="${next}">
<label for="code">Code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="12" required ${error ? html`aria-describedby="code-error" aria-invalid="true"` : ""} autofocus>
${error ? html`<p id="code-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Sign in</button></p>
</form>
<p class="muted"><a href="/sign-in">Use another address or get a new code</a></p></div>`,
    });
  }

  async function signedIn(c: import("hono").Context, accountId: string, next: string) {
    // A new session id at every sign-in; the one this browser had before is ended.
    await endWebSession(ctx, guard.sessionCookieOf(c));
    guard.setSessionCookie(c, await startWebSession(ctx, accountId));
    return c.redirect(safeNext(next), 303);
  }

  return new Hono()
    .get(
      "/sign-in",
      guard.page(async (c, web) => {
        const next = safeNext(c.req.query("next"));
        if (web.session) return c.redirect(next, 303);
        return c.html(emailForm(web, next));
      }),
    )
    .post(
      "/sign-in",
      guard.page(async (c, web) => {
        const next = safeNext(web.form.get("next"));
        const email = (web.form.get("email") ?? "").slice(0, 400);
        const result = await requestSignInCode(deps, {
          email,
          browserNonce: web.browserId,
          ip: clientIp(c),
        });
        if (!result.ok && result.code === "INVALID_EMAIL") {
          return c.html(emailForm(web, next, "Enter a valid email address.", email), 400);
        }
        if (!result.ok && result.code === "MAIL_FAILED") {
          c.header("Retry-After", "60");
          return c.html(
            emailForm(
              web,
              next,
              "We could not send the mail just now. Try again in a minute.",
              email,
            ),
            503,
          );
        }
        if (!result.ok) {
          c.header("Retry-After", String(result.retryAfterSeconds));
          const minutes = Math.ceil(result.retryAfterSeconds / 60);
          return c.html(
            emailForm(
              web,
              next,
              `Too many codes asked for. Try again in ${minutes} minute${minutes === 1 ? "" : "s"}.`,
              email,
            ),
            429,
          );
        }
        return c.redirect(`/sign-in/code?next=${encodeURIComponent(next)}`, 303);
      }),
    )
    .get(
      "/sign-in/code",
      guard.page(async (c, web) => c.html(await codeForm(web, safeNext(c.req.query("next"))))),
    )
    .post(
      "/sign-in/code",
      guard.page(async (c, web) => {
        const next = safeNext(web.form.get("next"));
        const code = (web.form.get("code") ?? "").replace(/\s/g, "").slice(0, 12);
        const result = await redeemSignInCode(ctx, { browserNonce: web.browserId, code });
        if (result.ok) return signedIn(c, result.account.id, next);
        const message =
          result.code === "INVALID_CODE"
            ? "That code is not right. Check the mail and try again."
            : "This code has expired or was tried too often. Ask for a new one.";
        return c.html(await codeForm(web, next, message), 400);
      }),
    )
    .get(
      "/sign-in/link",
      guard.page((c, web) =>
        // The link's secret is in the URL fragment: it never reaches a server log or a
        // Referer, and a mail scanner that opens the link signs nobody in (it takes a POST).
        c.html(
          renderPage({
            title: "Sign in",
            session: web.session,
            csrf: web.csrf,
            body: html`<div class="card"><form method="post" action="/sign-in/link">
${csrfField(web.csrf)}<input type="hidden" id="link-token" name="link" value="">
<p>Continue to sign in to AgentPass in this browser.</p>
<p><button type="submit">Continue</button></p></form>
<noscript><p>This link needs JavaScript; type the 6-digit code from the mail instead.</p></noscript></div>`,
          }),
        ),
      ),
    )
    .post(
      "/sign-in/link",
      guard.page(async (c, web) => {
        const link = (web.form.get("link") ?? "").slice(0, 100);
        const result = await redeemSignInLink(ctx, { browserNonce: web.browserId, link });
        if (result.ok) return signedIn(c, result.account.id, "/keys");
        return c.html(
          emailForm(
            web,
            "/keys",
            "This link has expired, was used already, or was opened in another browser. Ask for a new code here.",
          ),
          400,
        );
      }),
    )
    .post(
      "/sign-out",
      guard.page(async (c) => {
        await endWebSession(ctx, guard.sessionCookieOf(c));
        guard.clearSessionCookie(c);
        return c.redirect("/sign-in", 303);
      }),
    )
    .post(
      "/sign-out-everywhere",
      guard.signedIn(async (c, web) => {
        await endAllWebSessions(ctx, web.session.accountId);
        if (web.form.get("apps") === "yes")
          await revokeAllConnectedApps(ctx, web.session.accountId);
        guard.clearSessionCookie(c);
        return c.redirect("/sign-in", 303);
      }),
    );
}
