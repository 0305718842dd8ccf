import type { Answer } from "@agentpass/http";
import type { SafeHtml } from "./html.ts";

/**
 * The pages' Content-Security-Policy: only this site's own stylesheet, script and images, no
 * inline script, forms posted to `formAction` only, framed nowhere.
 */
export function contentSecurityPolicy(formAction = "'self'"): string {
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`;
}

/**
 * What every page answers with, an error page included: its policy; no caching (a page may show
 * a secret once); no window of another site may hold a handle to it.
 */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": contentSecurityPolicy(),
  "X-Frame-Options": "DENY",
  // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts.
  "Referrer-Policy": "same-origin",
  "Cache-Control": "no-store",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/** A page as an answer. */
export function htmlAnswer(
  page: SafeHtml | string,
  status = 200,
  headers: Record<string, string> = {},
): Answer {
  return {
    status,
    content: { type: "text/html; charset=UTF-8", data: page.toString() },
    headers,
  };
}

/** A 303 redirect: the browser goes on to `location` with a GET, whatever it asked with. */
export function redirect(location: string): Answer {
  // A header carries Latin-1 only; a location beyond it is sent percent-encoded.
  const sendable = /[\u0100-\uffff]/.test(location) ? encodeURI(location) : location;
  return { status: 303, headers: { Location: sendable } };
}

/** `answer` with `cookies` set (`Set-Cookie` values), after any it sets itself. */
export function withCookies(answer: Answer, ...cookies: string[]): Answer {
  return {
    ...answer,
    headers: { ...answer.headers, "Set-Cookie": [...cookiesOf(answer), ...cookies] },
  };
}

/**
 * `answer` as a page answers: the page headers, under what it sets itself (a consent page widens
 * its `form-action`), and `cookies` set before its own.
 */
export function withPageHeaders(answer: Answer, cookies: readonly string[] = []): Answer {
  const headers = { ...PAGE_HEADERS, ...answer.headers };
  const all = [...cookies, ...cookiesOf(answer)];
  if (all.length > 0) headers["Set-Cookie"] = all;
  return { ...answer, headers };
}

function cookiesOf(answer: Answer): readonly string[] {
  const set = answer.headers?.["Set-Cookie"] ?? [];
  return typeof set === "string" ? [set] : set;
}
