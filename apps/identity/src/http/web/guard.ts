import type { KeyObject } from "node:crypto";
import { type Answer, type EndpointRequest, type Page, readIncomingText } from "@agentpass/http";
import type { Needs } from "../../context.ts";
import { resolveWebSession, SESSION_MAX_MS, type WebSession } from "../../domain/web-sessions.ts";
import { randomSecret, sameHash, sha256 } from "../../infra/crypto.ts";
import { cookieHeader, readCookie } from "./cookies.ts";
import { createFlashCookies, type Flash, type FlashReader } from "./flash.ts";
import { htmlAnswer, redirect, withCookies, withPageHeaders } from "./page-answers.ts";

/** What a dashboard page handler gets beside the request. */
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

type Handler<R> = (request: EndpointRequest, web: R) => Answer | Promise<Answer>;

const MAX_FORM_BYTES = 16 * 1024;
const BROWSER_COOKIE_MAX_AGE_S = 400 * 24 * 60 * 60;

/**
 * Everything a dashboard page needs before its handler runs: the browser id, the session, and on
 * every POST the CSRF check (the form's `_csrf` must match this browser's token, and a
 * cross-site `Origin` or `Sec-Fetch-Site` is refused outright); and after it, the page headers
 * (`PAGE_HEADERS`) and the cookies it set on whatever the page answers.
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

  /** This browser's id; a new one is set (into `cookies`) when it has none. */
  function browserIdOf(request: EndpointRequest, cookies: string[]): string {
    const existing = readCookie(request, names.browser);
    if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const fresh = randomSecret();
    cookies.push(
      cookieHeader(names.browser, fresh, { ...cookieOptions, maxAge: BROWSER_COOKIE_MAX_AGE_S }),
    );
    return fresh;
  }

  /** A POST from another site is refused before its body is read. */
  function isCrossSite(request: EndpointRequest): boolean {
    const site = request.header("sec-fetch-site");
    if (site !== undefined && site !== "same-origin" && site !== "none") return true;
    const origin = request.header("origin");
    if (origin === undefined || origin === "null") return false; // the token still decides
    return URL.parse(origin)?.host !== request.header("host");
  }

  /** The form of a POST, once it is proven to come from this site's page; else null. */
  async function checkedForm(request: EndpointRequest, csrf: string) {
    if (isCrossSite(request)) return null;
    const text = await readIncomingText(request.incoming, MAX_FORM_BYTES);
    if (text === undefined) return null;
    const form = new URLSearchParams(text);
    return sameHash(form.get("_csrf") ?? "", csrf) ? form : null;
  }

  /**
   * Prepares the page's `WebRequest`, runs `handler` (a forged or expired post gets a 403
   * instead), and gives what it answers the page headers and the cookies set on the way.
   */
  async function serve(request: EndpointRequest, handler: Handler<WebRequest>): Promise<Answer> {
    const cookies: string[] = [];
    const browserId = browserIdOf(request, cookies);
    const csrf = sha256(`csrf:${browserId}`);
    const session = await resolveWebSession(ctx, readCookie(request, names.session));
    let flash: Flash | null = null;
    if (request.method === "GET") {
      const taken = flashes.take(request, { browserId, session });
      if (taken) cookies.push(taken.clear);
      flash = taken?.flash ?? null;
    }
    let form = new URLSearchParams();
    if (request.method === "POST") {
      const checked = await checkedForm(request, csrf);
      if (!checked) return withPageHeaders(FORM_EXPIRED, cookies);
      form = checked;
    }
    const answer = await handler(request, { session, browserId, csrf, form, flash });
    return withPageHeaders(answer, cookies);
  }

  return {
    /** The handler of a page anyone may see. */
    page(handler: Handler<WebRequest>): Page["handle"] {
      return (request) => serve(request, handler);
    },

    /** The handler of a page for a signed-in person; others are sent to sign in first. */
    signedIn(handler: Handler<SignedInRequest>): Page["handle"] {
      const orSignIn: Handler<WebRequest> = (request, web) => {
        const { session } = web;
        if (session) return handler(request, { ...web, session });
        const asked = request.search ? `${request.path}?${request.search}` : request.path;
        const next = request.method === "GET" ? asked : "/keys";
        return redirect(`/sign-in?next=${encodeURIComponent(next)}`);
      };
      return (request) => serve(request, orSignIn);
    },

    /**
     * The answer to a form post that did what it asked: 303 to the page at `path`, which shows
     * `flash` once to `reader` (the browser and the session it will have there).
     */
    seeOther(reader: FlashReader, path: string, flash?: Flash): Answer {
      if (!flash) return redirect(path);
      return withCookies(redirect(path), flashes.leave(reader, path, flash));
    },

    /** The session cookie of a new sign-in (a new id every time: no fixation). */
    sessionCookie(token: string): string {
      return cookieHeader(names.session, token, {
        ...cookieOptions,
        maxAge: SESSION_MAX_MS / 1000,
      });
    },

    /** The cookie that ends this browser's session. */
    clearedSessionCookie(): string {
      return cookieHeader(names.session, "", { ...cookieOptions, maxAge: 0 });
    },

    sessionCookieOf(request: EndpointRequest): string | undefined {
      return readCookie(request, names.session);
    },
  };
}

export type WebGuard = ReturnType<typeof createWebGuard>;

/** The answer to a forged or expired form post. */
const FORM_EXPIRED = htmlAnswer(
  `<!doctype html><meta charset="utf-8"><title>Form expired · AgentPass</title><link rel="stylesheet" href="/assets/style.css"><main><h1>This form has expired</h1><p>Go back, reload the page and try again.</p></main>`,
  403,
);

/**
 * A path on this site to go to after sign-in; anything else (other hosts, `//x`, `/\x`,
 * control or non-ASCII characters that browsers strip or a header cannot carry) is "/keys".
 */
export function safeNext(value: string | null | undefined): string {
  if (!value || value.length > 500 || !/^\/(?![/\\])[\x21-\x7e]*$/.test(value)) return "/keys";
  return value;
}
