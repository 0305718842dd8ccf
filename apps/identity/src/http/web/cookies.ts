import type { RefusedRequest } from "@agentpass/http";

/** The attributes the pages' cookies are written with. */
interface CookieOptions {
  path: string;
  /** Seconds; 0 deletes the cookie. */
  maxAge: number;
  httpOnly: true;
  secure: boolean;
  sameSite: "Lax";
}

/** Characters a cookie value may hold unquoted (RFC 6265 section 4.1.1, with space). */
const COOKIE_VALUE = /^[ !#-:<-[\]-~]*$/;

/**
 * The value of the cookie `name` the request carries, percent-decoded; undefined when it carries
 * none or only one that is malformed.
 */
export function readCookie(
  request: Pick<RefusedRequest, "header">,
  name: string,
): string | undefined {
  for (const pair of (request.header("cookie") ?? "").split(";")) {
    const equals = pair.indexOf("=");
    if (equals === -1 || pair.slice(0, equals).trim() !== name) continue;
    let value = pair.slice(equals + 1).trim();
    if (value.length > 1 && value.startsWith('"') && value.endsWith('"'))
      value = value.slice(1, -1);
    if (COOKIE_VALUE.test(value)) return decodeCookieValue(value);
  }
  return undefined;
}

/** Every value of the cookies named `name` the request carries, as sent. */
export function readCookies(request: Pick<RefusedRequest, "header">, name: string): string[] {
  const prefix = `${name}=`;
  return (request.header("cookie") ?? "")
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(prefix))
    .map((pair) => pair.slice(prefix.length));
}

/** A `Set-Cookie` value: the value percent-encoded, then Max-Age, Path and the flags. */
export function cookieHeader(name: string, value: string, options: CookieOptions): string {
  const secure = options.secure ? "; Secure" : "";
  return `${name}=${encodeURIComponent(value)}; Max-Age=${options.maxAge}; Path=${options.path}; HttpOnly${secure}; SameSite=${options.sameSite}`;
}

function decodeCookieValue(value: string): string {
  if (!value.includes("%")) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
