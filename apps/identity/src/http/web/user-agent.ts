import Bowser from "bowser";

/** The names bowser knows; its generic fallback would name a browser after any text it is sent. */
const BROWSERS = new Set<string>(Object.values(Bowser.BROWSER_MAP));
const SYSTEMS = new Set<string>(Object.values(Bowser.OS_MAP));

/**
 * A user agent as a person's page shows it: "Chrome on Linux", "Firefox", "Unknown browser on
 * macOS", "Unknown browser". Only names from bowser's own lists are shown, never the string a
 * client sent: a user agent is whatever the sender typed, and could read like AgentPass talking.
 */
export function describeUserAgent(userAgent: string | null): string {
  if (!userAgent) return "Unknown browser";
  const parsed = Bowser.parse(userAgent);
  const browser = BROWSERS.has(parsed.browser.name ?? "") ? parsed.browser.name : "Unknown browser";
  const system = parsed.os.name && SYSTEMS.has(parsed.os.name) ? parsed.os.name : null;
  return system ? `${browser} on ${system}` : (browser as string);
}
