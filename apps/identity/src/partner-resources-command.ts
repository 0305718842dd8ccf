import type { CommandAnswer } from "./command-answer.ts";
import type { Needs } from "./context.ts";
import { addPartnerResource, partnerResources, removePartnerResource } from "./domain/oauth.ts";

export type PartnerResourcesAction = "add" | "list" | "remove";

/**
 * `agentpass-server partner-resources add|list|remove`: the resource URLs (RFC 8707) a partner
 * answers for, as the partner's dashboard page sets them. A client asking AgentPass for a token
 * with `resource=<url>` (`agentpass token --resource <url>`) gets one bound to that partner.
 */
export async function runPartnerResourcesCommand(
  ctx: Needs<"store" | "oauth" | "clock">,
  action: PartnerResourcesAction,
  partnerId: string,
  url: string | undefined,
  options: { json: boolean },
): Promise<CommandAnswer> {
  if (!(await ctx.store.findPartner(partnerId))) return { ok: false, error: "No such partner" };
  if (action === "list") {
    const urls = await partnerResources(ctx, partnerId);
    return { ok: true, output: options.json ? JSON.stringify(urls) : urls.join("\n") };
  }
  if (url === undefined) return { ok: false, error: "Missing resource URL" };
  if (action === "remove") {
    await removePartnerResource(ctx, partnerId, url);
    return { ok: true, output: "removed" };
  }
  const added = await addPartnerResource(ctx, partnerId, url);
  if (added.ok) return { ok: true, output: "added" };
  return {
    ok: false,
    error:
      added.code === "TAKEN"
        ? "Another partner already answers for that URL"
        : "A resource is an https URL (http only on a loopback address) without a query or fragment",
  };
}
