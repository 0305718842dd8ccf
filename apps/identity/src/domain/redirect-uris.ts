/**
 * Which redirect URIs an OAuth client may register, and which presented URI matches one. Every
 * client here is public, so the native apps' redirects of RFC 8252 are the ones that matter:
 * a loopback server on a port the OS picks at run time (section 7.3), and a private-use URI
 * scheme the app claims (section 7.1).
 */

const MAX_URIS = 10;
const MAX_URI_LENGTH = 2000;

/**
 * Loopback IP literals (RFC 8252 section 7.3). `localhost` is also accepted on http, as before,
 * but matched exactly: section 8.3 does not recommend it, since a name can resolve off the
 * machine, and its port is not relaxed.
 */
const LOOPBACK_HOSTS = ["127.0.0.1", "[::1]", "localhost"];

/**
 * Schemes a browser handles itself, never a native app: a redirect to them runs script, shows
 * attacker-chosen content under no origin, or reads the machine's files.
 */
const REFUSED_SCHEMES = new Set([
  "javascript:",
  "vbscript:",
  "data:",
  "blob:",
  "file:",
  "filesystem:",
  "about:",
  "view-source:",
  "intent:",
  "jar:",
  "ws:",
  "wss:",
  "ftp:",
]);

/**
 * Redirect URIs a client may register (RFC 7591, or a Client ID Metadata Document): 1 to 10
 * absolute URIs without a fragment or credentials, each of them
 * - https;
 * - http on a loopback host (`127.0.0.1`, `[::1]`, `localhost`), a native app's local server;
 * - a private-use scheme (`com.example.app:/callback`, `cursor://…`), a native app's claimed
 *   scheme, never one a browser handles itself (`javascript:`, `data:`, `file:`, …).
 * Null when any one is not.
 *
 * @example validRedirectUris(["http://127.0.0.1/callback", "com.example.app:/oauth"])
 */
export function validRedirectUris(value: unknown): string[] | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_URIS) return null;
  const uris: string[] = [];
  for (const item of value) {
    if (typeof item !== "string" || item.length > MAX_URI_LENGTH || !isRegistrable(item)) {
      return null;
    }
    uris.push(item);
  }
  return uris;
}

/**
 * Whether `presented` (an authorization request's `redirect_uri`) is one of `registered`: the
 * same string, except that a loopback IP redirect matches on any port (RFC 8252 section 7.3:
 * the app's server listens wherever the OS lets it). Scheme, host, path and query still match
 * character for character.
 *
 * @example redirectUriMatches(["http://127.0.0.1/callback"], "http://127.0.0.1:53817/callback")
 */
export function redirectUriMatches(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const loopback = withoutLoopbackPort(presented);
  if (loopback === null || !isRegistrable(presented)) return false;
  return registered.some((uri) => withoutLoopbackPort(uri) === loopback);
}

function isRegistrable(value: string): boolean {
  const url = URL.parse(value);
  // Control characters and spaces would be stripped or escaped by the parser: the string
  // registered must be the URI itself.
  if (url === null || /[\s\p{Cc}]/u.test(value)) return false;
  if (url.hash || value.includes("#") || url.username || url.password) return false;
  if (url.protocol === "https:") return url.hostname !== "";
  if (url.protocol === "http:") return LOOPBACK_HOSTS.includes(url.hostname);
  return isPrivateUseScheme(url);
}

/** RFC 8252 section 7.1: a scheme of the app's own, followed by something to call back to. */
function isPrivateUseScheme(url: URL): boolean {
  if (REFUSED_SCHEMES.has(url.protocol)) return false;
  return url.host !== "" || url.pathname !== "";
}

/** An http loopback IP URI with its port taken out; null for any other URI. */
function withoutLoopbackPort(uri: string): string | null {
  const match = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/s.exec(uri);
  if (!match || Number(match[2] ?? 0) > 65_535) return null;
  return `http://${match[1]}${match[3] ?? ""}`;
}
