import type { Answer } from "@agentpass/http";
import type { WebRequest } from "./guard.ts";
import { html, type SafeHtml } from "./html.ts";
import { csrfField, renderPage } from "./page.ts";
import { htmlAnswer } from "./page-answers.ts";

/**
 * The second step of a destructive action, a page of its own (GET): says what happens, then
 * posts to `action` with `confirm=yes`. A post without it changes nothing.
 */
export function confirmPage(
  web: WebRequest,
  page: {
    title: string;
    text: SafeHtml;
    action: string;
    button: string;
    cancel: string;
  },
): Answer {
  return htmlAnswer(
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
