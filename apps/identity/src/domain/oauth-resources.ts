import type { Needs } from "../context.ts";

/**
 * The resource URLs a partner answers for (RFC 8707): a client asking for one gets tokens bound
 * to that partner.
 */

export type ResourceResult = { ok: true } | { ok: false; code: "INVALID_URL" | "TAKEN" };

/**
 * Registers `url` as a resource of a partner (RFC 8707): tokens asked for it are bound to the
 * partner. An absolute https URL (http on a loopback address, for local development) without
 * a query or fragment; one partner per URL.
 */
export async function addPartnerResource(
  ctx: Needs<"oauth" | "clock">,
  partnerId: string,
  url: string,
): Promise<ResourceResult> {
  const resource = canonicalResource(url);
  if (!resource) return { ok: false, code: "INVALID_URL" };
  const added = await ctx.oauth.addResource(partnerId, resource, ctx.clock());
  if (added) return { ok: true };
  return (await ctx.oauth.partnerOfResource(resource)) === partnerId
    ? { ok: true }
    : { ok: false, code: "TAKEN" };
}

export async function removePartnerResource(
  ctx: Needs<"oauth">,
  partnerId: string,
  url: string,
): Promise<void> {
  await ctx.oauth.removeResource(partnerId, url);
}

export function partnerResources(ctx: Needs<"oauth">, partnerId: string): Promise<string[]> {
  return ctx.oauth.resourcesOf(partnerId);
}

function canonicalResource(value: string): string | undefined {
  if (value.length > 2000) return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (!isHttpsOrLoopback(url) || url.hash || url.search || url.username || url.password) {
    return undefined;
  }
  // The URL as a client will send it: no trailing slash on a bare origin.
  return url.pathname === "/" ? url.origin : url.href;
}

/** The partner a `resource` URL names (RFC 8707), or undefined when no partner registered it. */
export async function partnerOfResource(
  ctx: Needs<"oauth">,
  resource: string,
): Promise<string | undefined> {
  const canonical = canonicalResource(resource);
  return canonical ? ctx.oauth.partnerOfResource(canonical) : undefined;
}

/** https, or http on a loopback address (a native app's or a developer's own machine). */
function isHttpsOrLoopback(url: URL): boolean {
  const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(url.hostname);
  return url.protocol === "https:" || (url.protocol === "http:" && loopback);
}
