/**
 * The URL an agent called, as its DPoP proof names it (`htu`). Behind a proxy the request a
 * partner receives says another scheme, host or port than the agent used, so the partner names
 * its public base URL once (`publicUrl`) and only the path is taken from the request.
 */

/**
 * `publicUrl` without a trailing slash, or undefined when none is given (an empty one, as an unset
 * variable gives, is none); throws a `TypeError` for one that is not an http(s) URL without
 * query, when the middleware is made.
 */
export function publicBaseOf(publicUrl: unknown): string | undefined {
  if (publicUrl === undefined || publicUrl === "") return undefined;
  const url = parseUrl(publicUrl);
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash) {
    throw new TypeError(
      `@agentpass/verify: publicUrl is not an http(s) URL without query: ${String(publicUrl)}`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** A URL, or null (`URL.parse` is Node 22's: the library runs on 20). */
function parseUrl(value: unknown): URL | null {
  try {
    return typeof value === "string" ? new URL(value) : null;
  } catch {
    return null;
  }
}

/**
 * `<base><path>`, the path without its query: `base` is the public base URL, else the origin
 * the request itself was addressed to.
 */
export function calledUrl(base: string, path: string): string {
  const end = path.search(/[?#]/);
  return `${base}${end === -1 ? path : path.slice(0, end)}`;
}

/** The called URL of a request addressed to `href` (a Fetch `Request`'s `url`). */
export function calledUrlOf(base: string | undefined, href: string): string {
  const url = new URL(href);
  return `${base ?? url.origin}${url.pathname}`;
}
