import type { KeyObject } from "node:crypto";
import { readHeader, readTextBody } from "@agentpass/http";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { Needs } from "../../context.ts";
import { resolveWebSession, SESSION_MAX_MS, type WebSession } from "../../domain/web-sessions.ts";
import { randomSecret, sameHash, sha256 } from "../../infra/crypto.ts";
import { createFlashCookies, type Flash, type FlashReader } from "./flash.ts";

/** What a dashboard page handler gets beside the Hono context. */
export interface WebRequest {
  session: WebSession | null;
  /** The random id of this browser (HttpOnly cookie): sign-in codes are bound to it. */
  browserId: string;
  /** The CSRF token every form of this browser carries. */
  csrf: string;
  /** The checked form fields of a POST; empty on GET. */
  form: URLSearchParams;
  /** On GET, what the form post that led here left for this page (`seeOther`), shown once. */
  flash: Flash | null;
}

export interface SignedInRequest extends WebRequest {
  session: WebSession;
}

type Handler<R> = (c: Context, web: R) => Response | Promise<Response>;

const MAX_FORM_BYTES = 16 * 1024;
const BROWSER_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60;

/**
 * Everything a dashboard page needs before its handler runs: security headers, the browser id,
 * the session, and on every POST the CSRF check (the form's `_csrf` must match this browser's
 * token, and a cross-site `Origin` or `Sec-Fetch-Site` is refused outright).
 *
 * Cookies are `__Host-` prefixed and Secure when the public URL is https, HttpOnly and
 * SameSite=Lax always. Over plain http (localhost in development) the prefix is impossible.
 *
 * A form post that succeeds answers `seeOther`: 303 to a page, with what that page should say
 * once (a new key, a notice) in a flash cookie sealed under `flashKey` (`flash.ts`). Reloading
 * the page then repeats no post, and shows no secret again.
 */
export function createWebGuard(
  ctx: Needs<"web" | "clock">,
  options: { secure: boolean; flashKey: KeyObject },
) {
  const prefix = options.secure ? "__Host-" : "";
  const names = { session: `${prefix}agentpass_session`, browser: `${prefix}agentpass_browser` };
  const cookieOptions = {
    path: "/",
    httpOnly: true,
    secure: options.secure,
    sameSite: "Lax",
  } as const;
  const flashes = createFlashCookies({
    key: options.flashKey,
    secure: options.secure,
    clock: ctx.clock,
  });

  function setSecurityHeaders(c: Context): void {
    c.header(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    c.header("X-Frame-Options", "DENY");
    // same-origin, not no-referrer: with no-referrer Chromium sends `Origin: null` on form posts.
    c.header("Referrer-Policy", "same-origin");
    c.header("Cache-Control", "no-store");
    c.header("Cross-Origin-Opener-Policy", "same-origin");
  }

  function browserIdOf(c: Context): string {
    const existing = getCookie(c, names.browser);
    if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const fresh = randomSecret();
    setCookie(c, names.browser, fresh, { ...cookieOptions, maxAge: BROWSER_COOKIE_MAX_AGE_S });
    return fresh;
  }

  /** A POST from another site is refused before its body is read. */
  function isCrossSite(c: Context): boolean {
    const site = readHeader(c, "sec-fetch-site");
    if (site !== undefined && site !== "same-origin" && site !== "none") return true;
    const origin = readHeader(c, "origin");
    if (origin === undefined || origin === "null") return false; // the token still decides
    return URL.parse(origin)?.host !== readHeader(c, "host");
  }

  /** Headers, browser id, session and, on POST, the checked form; or the 403 of a forged post. */
  async function prepare(c: Context): Promise<WebRequest | Response> {
    setSecurityHeaders(c);
    const browserId = browserIdOf(c);
    const csrf = sha256(`csrf:${browserId}`);
    const session = await resolveWebSession(ctx, getCookie(c, names.session));
    let form = new URLSearchParams();
    const flash = c.req.method === "GET" ? flashes.take(c, { browserId, session }) : null;
    if (c.req.method === "POST") {
      if (isCrossSite(c)) return forbidden(c);
      const text = await readTextBody(c, MAX_FORM_BYTES);
      if (text === undefined) return forbidden(c);
      form = new URLSearchParams(text);
      if (!sameHash(form.get("_csrf") ?? "", csrf)) return forbidden(c);
    }
    return { session, browserId, csrf, form, flash };
  }

  return {
    /** Wraps the handler of a page anyone may see. */
    page(handler: Handler<WebRequest>) {
      return async (c: Context): Promise<Response> => {
        const web = await prepare(c);
        return web instanceof Response ? web : handler(c, web);
      };
    },

    /** Wraps the handler of a page for a signed-in person; others are sent to sign in first. */
    signedIn(handler: Handler<SignedInRequest>) {
      return async (c: Context): Promise<Response> => {
        const web = await prepare(c);
        if (web instanceof Response) return web;
        const { session } = web;
        if (session) return handler(c, { ...web, session });
        const next = c.req.method === "GET" ? c.req.path + new URL(c.req.url).search : "/keys";
        return c.redirect(`/sign-in?next=${encodeURIComponent(next)}`, 303);
      };
    },

    /**
     * The answer to a form post that did what it asked: 303 to the page at `path`, which shows
     * `flash` once to `reader` (the browser and the session it will have there).
     */
    seeOther(c: Context, reader: FlashReader, path: string, flash?: Flash): Response {
      if (flash) flashes.leave(c, reader, path, flash);
      return c.redirect(path, 303);
    },

    /** Starts the session cookie of a new sign-in (a new id every time: no fixation). */
    setSessionCookie(c: Context, token: string): void {
      setCookie(c, names.session, token, { ...cookieOptions, maxAge: SESSION_MAX_MS / 1000 });
    },

    clearSessionCookie(c: Context): void {
      setCookie(c, names.session, "", { ...cookieOptions, maxAge: 0 });
    },

    sessionCookieOf(c: Context): string | undefined {
      return getCookie(c, names.session);
    },
  };
}

export type WebGuard = ReturnType<typeof createWebGuard>;

function forbidden(c: Context): Response {
  return c.html(
    `<!doctype html><meta charset="utf-8"><title>Form expired · AgentPass</title><link rel="stylesheet" href="/assets/style.css"><main><h1>This form has expired</h1><p>Go back, reload the page and try again.</p></main>`,
    403,
  );
}

/**
 * A path on this site to go to after sign-in; anything else (other hosts, `//x`, `/\x`,
 * control or non-ASCII characters that browsers strip or a header cannot carry) is "/keys".
 */
export function safeNext(value: string | null | undefined): string {
  if (!value || value.length > 500 || !/^\/(?![/\\])[\x21-\x7e]*$/.test(value)) return "/keys";
  return value;
}
