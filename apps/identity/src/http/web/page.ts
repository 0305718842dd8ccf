import type { WebSession } from "../../domain/web-sessions.ts";
import type { Flash } from "./flash.ts";
import { html, type SafeHtml } from "./html.ts";

interface PageOptions {
  title: string;
  session: WebSession | null;
  csrf: string;
  body: SafeHtml | string;
}

/** The frame of every dashboard page: navigation, the main content, no inline script. */
export function renderPage({ title, session, csrf, body }: PageOptions): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · AgentPass</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
<header><nav aria-label="Main">
<a class="brand" href="/">AgentPass</a>
${
  session
    ? html`<a href="/keys">Keys</a><a href="/activity">Activity</a><a href="/partners">Partners</a><a href="/directory">Directory</a><a href="/account">Account</a>
<span class="who"><span class="visually-hidden">Signed in as </span><strong id="signed-in-as">${session.email}</strong></span>
<form class="inline" method="post" action="/sign-out">${csrfField(csrf)}<button class="secondary" type="submit">Sign out</button></form>`
    : html`<a href="/directory">Directory</a><a href="/docs">API</a><a href="/sign-in">Sign in</a>`
}
</nav></header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

/** The hidden field every form carries (double-submit CSRF token). */
export function csrfField(csrf: string) {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}

/** The notice a form post left for this page, if any: a status, or an alert for a failure. */
export function flashNotice(flash: Flash | null) {
  if (flash?.kind !== "notice") return "";
  return flash.tone === "ok"
    ? html`<p class="ok" role="status">${flash.text}</p>`
    : html`<p class="error" role="alert">${flash.text}</p>`;
}

/** A date for people: UTC, to the minute. */
export function formatTime(ms: number | null): string {
  return ms === null ? "never" : `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export { html };
