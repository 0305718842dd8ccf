import { type Answer, definePage, type EndpointRequest, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { findAccountByEmail } from "../../domain/accounts.ts";
import type { AuditEvent } from "../../domain/audit.ts";
import { revokeAllConnectedApps } from "../../domain/grants.ts";
import {
  pendingSignInAddress,
  type RedeemResult,
  redeemSignInCode,
  redeemSignInLink,
  requestSignInCode,
  type SignInDeps,
} from "../../domain/sign-in.ts";
import { endAllWebSessions, endWebSession, startWebSession } from "../../domain/web-sessions.ts";
import type { Mailer } from "../../infra/mailer.ts";
import { byPerson, clientOf } from "../web/audit.ts";
import { safeNext, type WebGuard, type WebRequest } from "../web/guard.ts";
import { csrfField, html, renderPage } from "../web/page.ts";
import { htmlAnswer, redirect, withCookies } from "../web/page-answers.ts";

interface SignInPagesOptions {
  ctx: IdentityContext;
  guard: WebGuard;
  mailer: Mailer;
  limits: Pick<
    SignInDeps,
    "perAddress" | "perIp" | "perRememberedBrowser" | "perIpPastAddressBudget" | "failuresPerIp"
  >;
  publicUrl: string;
}

/**
 * Sign-up and sign-in, one flow: an email gets a code (6 digits, 16 past the address's budget) and a one-click link, redeemable
 * only in the browser that asked. Every address gets the same answer.
 */
export function signInPages({ ctx, guard, mailer, limits, publicUrl }: SignInPagesOptions): Page[] {
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
<p>If ${sentTo ? html`<strong id="sent-to">${sentTo}</strong>` : "the address"} can receive mail, a sign-in code and a sign-in link are on their way. They work for 10 minutes, in this browser only.</p>
${mailer.logsInstead ? html`<p class="warning" role="note">Development: no mail is sent (SMTP_URL is not set). The code is in the identity service's log.</p>` : ""}
<form method="post" action="/sign-in/code">
${csrfField(web.csrf)}<input type="hidden" name="next" value="${next}">
<label for="code">Code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="24" required ${error ? html`aria-describedby="code-error" aria-invalid="true"` : ""} autofocus>
${error ? html`<p id="code-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Sign in</button></p>
</form>
<p class="muted"><a href="/sign-in">Use another address or get a new code</a></p></div>`,
    });
  }

  async function signedIn(request: EndpointRequest, accountId: string, next: string) {
    // A new session id at every sign-in; the one this browser had before is ended.
    await endWebSession(ctx, guard.sessionCookieOf(request));
    await ctx.audit.record({
      ...byPerson(request, accountId),
      action: "sign_in",
      outcome: "success",
      subject: { kind: "account", id: accountId },
    });
    const session = guard.sessionCookie(await startWebSession(ctx, accountId));
    return withCookies(redirect(safeNext(next)), session);
  }

  /**
   * A wrong code is recorded on the account of its email, and as `locked_out` when it used the
   * code's last try. The email itself is never recorded: one without an account (a typo, a
   * stranger's guess) leaves no trace of it in the log.
   */
  async function recordFailedSignIn(
    request: EndpointRequest,
    result: Exclude<RedeemResult, { ok: true } | { code: "RATE_LIMITED" }>,
  ) {
    const found =
      result.code === "INVALID_CODE" ? await findAccountByEmail(ctx, result.email) : null;
    const accountId = found?.ok ? found.account.id : null;
    const event: AuditEvent = {
      action: "sign_in",
      outcome: result.code === "INVALID_CODE" && result.lockedOut ? "locked_out" : "failure",
      actor: { kind: "service" },
      accountId,
      subject: accountId ? { kind: "account", id: accountId } : undefined,
      client: clientOf(request),
      detail: { reason: result.code === "INVALID_CODE" ? "wrong_code" : "no_open_code" },
    };
    await ctx.audit.record(event);
  }

  /** A refusal past the client address's budget of failed sign-ins. */
  function tooManyFailures(retryAfterSeconds: number) {
    return {
      error: `Too many failed sign-ins from your network. Try again in ${inMinutes(retryAfterSeconds)}.`,
      headers: { "Retry-After": String(retryAfterSeconds) },
    };
  }

  /** The email form again, answered `status` with `error` (and `headers`). */
  function refuse(
    web: WebRequest,
    next: string,
    email: string,
    refusal: { status: number; error: string; headers?: Record<string, string> },
  ): Answer {
    return htmlAnswer(emailForm(web, next, refusal.error, email), refusal.status, refusal.headers);
  }

  const askEmail = definePage({
    method: "GET",
    path: "/sign-in",
    handle: guard.page(async (request, web) => {
      const next = safeNext(request.query.get("next"));
      if (web.session) return redirect(next);
      return htmlAnswer(emailForm(web, next));
    }),
  });
  const sendCode = definePage({
    method: "POST",
    path: "/sign-in",
    handle: guard.page(async (request, web) => {
      const next = safeNext(web.form.get("next"));
      const email = (web.form.get("email") ?? "").slice(0, 400);
      const result = await requestSignInCode(deps, {
        email,
        browserNonce: web.browserId,
        ip: request.clientIp(),
      });
      if (!result.ok && result.code === "INVALID_EMAIL") {
        return refuse(web, next, email, { status: 400, error: "Enter a valid email address." });
      }
      if (!result.ok && result.code === "MAIL_FAILED") {
        return refuse(web, next, email, {
          status: 503,
          error: "We could not send the mail just now. Try again in a minute.",
          headers: { "Retry-After": "60" },
        });
      }
      if (!result.ok) {
        return refuse(web, next, email, {
          status: 429,
          error: `Too many codes asked for. Try again in ${inMinutes(result.retryAfterSeconds)}.`,
          headers: { "Retry-After": String(result.retryAfterSeconds) },
        });
      }
      return redirect(`/sign-in/code?next=${encodeURIComponent(next)}`);
    }),
  });
  const askCode = definePage({
    method: "GET",
    path: "/sign-in/code",
    handle: guard.page(async (request, web) =>
      htmlAnswer(await codeForm(web, safeNext(request.query.get("next")))),
    ),
  });
  const redeemCode = definePage({
    method: "POST",
    path: "/sign-in/code",
    handle: guard.page(async (request, web) => {
      const next = safeNext(web.form.get("next"));
      const code = (web.form.get("code") ?? "").replace(/\s/g, "").slice(0, 20);
      const result = await redeemSignInCode(ctx, limits.failuresPerIp, {
        browserNonce: web.browserId,
        code,
        ip: request.clientIp(),
      });
      if (result.ok) return signedIn(request, result.account.id, next);
      if (result.code === "RATE_LIMITED") {
        const { error, headers } = tooManyFailures(result.retryAfterSeconds);
        return htmlAnswer(await codeForm(web, next, error), 429, headers);
      }
      await recordFailedSignIn(request, result);
      const message =
        result.code === "INVALID_CODE"
          ? "That code is not right. Check the mail and try again."
          : "This code has expired or was tried too often. Ask for a new one.";
      return htmlAnswer(await codeForm(web, next, message), 400);
    }),
  });
  const followLink = definePage({
    method: "GET",
    path: "/sign-in/link",
    handle: guard.page((_request, web) =>
      // The link's secret is in the URL fragment: it never reaches a server log or a
      // Referer, and a mail scanner that opens the link signs nobody in (it takes a POST).
      htmlAnswer(
        renderPage({
          title: "Sign in",
          session: web.session,
          csrf: web.csrf,
          body: html`<div class="card"><form method="post" action="/sign-in/link">
${csrfField(web.csrf)}<input type="hidden" id="link-token" name="link" value="">
<p>Continue to sign in to AgentPass in this browser.</p>
<p><button type="submit">Continue</button></p></form>
<noscript><p>This link needs JavaScript; type the code from the mail instead.</p></noscript></div>`,
        }),
      ),
    ),
  });
  const redeemLink = definePage({
    method: "POST",
    path: "/sign-in/link",
    handle: guard.page(async (request, web) => {
      const link = (web.form.get("link") ?? "").slice(0, 100);
      const result = await redeemSignInLink(ctx, limits.failuresPerIp, {
        browserNonce: web.browserId,
        link,
        ip: request.clientIp(),
      });
      if (result.ok) return signedIn(request, result.account.id, "/keys");
      if (result.code === "RATE_LIMITED") {
        return refuse(web, "/keys", "", {
          status: 429,
          ...tooManyFailures(result.retryAfterSeconds),
        });
      }
      await recordFailedSignIn(request, result);
      return refuse(web, "/keys", "", {
        status: 400,
        error:
          "This link has expired, was used already, or was opened in another browser. Ask for a new code here.",
      });
    }),
  });
  const signOut = definePage({
    method: "POST",
    path: "/sign-out",
    handle: guard.page(async (request, web) => {
      await endWebSession(ctx, guard.sessionCookieOf(request));
      if (web.session) {
        await ctx.audit.record({
          ...byPerson(request, web.session.accountId),
          action: "sign_out",
          outcome: "success",
        });
      }
      return withCookies(redirect("/sign-in"), guard.clearedSessionCookie());
    }),
  });
  const signOutEverywhere = definePage({
    method: "POST",
    path: "/sign-out-everywhere",
    handle: guard.signedIn(async (request, web) => {
      await endAllWebSessions(ctx, web.session.accountId);
      const apps =
        web.form.get("apps") === "yes"
          ? await revokeAllConnectedApps(ctx, web.session.accountId)
          : 0;
      await ctx.audit.record({
        ...byPerson(request, web.session.accountId),
        action: "sign_out_everywhere",
        outcome: "success",
        detail: { connectedAppsRevoked: apps },
      });
      return withCookies(redirect("/sign-in"), guard.clearedSessionCookie());
    }),
  });
  return [
    askEmail,
    sendCode,
    askCode,
    redeemCode,
    followLink,
    redeemLink,
    signOut,
    signOutEverywhere,
  ];
}

function inMinutes(seconds: number): string {
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
