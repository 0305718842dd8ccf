import type { OperatorContext } from "./accounts-command.ts";
import { recordAdminAction } from "./audit-command.ts";
import { type CommandAnswer, listCommand } from "./command-answer.ts";
import { isId } from "./domain/ids.ts";
import { deletePartner } from "./domain/partners.ts";
import type { PartnerRow } from "./store/operator-store.ts";

export type PartnersAction = "list" | "suspend" | "reinstate" | "delete";

/**
 * `agentpass-server partners list|suspend|reinstate|delete`. A suspended partner's keys are
 * refused as revoked (verify's 403) from the next request on, on every instance, and the
 * directory stops listing it, until it is reinstated; its owner sees why on its dashboard page.
 * `delete` deletes it as its owner can. Each change is recorded in the audit log.
 */
export async function runPartnersCommand(
  ctx: OperatorContext,
  action: PartnersAction,
  partnerId: string | undefined,
  options: { json: boolean; limit: string | undefined },
): Promise<CommandAnswer> {
  if (action === "list") {
    return listCommand(options, ctx.operator.listPartners, presentPartner, partnerLine);
  }
  if (!partnerId) return { ok: false, error: "Missing partner id" };
  const partner = isId(partnerId) ? await ctx.store.findPartner(partnerId) : undefined;
  if (!partner) return { ok: false, error: "No such partner" };
  const event = {
    accountId: partner.ownerAccountId,
    subject: { kind: "partner", id: partner.id },
    detail: { name: partner.name },
  };
  switch (action) {
    case "suspend":
    case "reinstate": {
      const at = action === "suspend" ? ctx.clock() : null;
      if (!(await ctx.operator.setPartnerSuspended(partner.id, at))) {
        return { ok: true, output: action === "suspend" ? "already suspended" : "not suspended" };
      }
      await recordAdminAction(ctx, { action: `partner.${action}`, ...event });
      return { ok: true, output: action === "suspend" ? "suspended" : "reinstated" };
    }
    case "delete": {
      if (!(await deletePartner(ctx, partner.ownerAccountId, partner.id))) {
        return { ok: false, error: "No such partner" };
      }
      await recordAdminAction(ctx, { action: "partner.delete", ...event });
      return { ok: true, output: "deleted" };
    }
  }
}

const iso = (time: number | null) => (time === null ? null : new Date(time).toISOString());

function presentPartner(partner: PartnerRow) {
  return {
    ...partner,
    createdAt: iso(partner.createdAt),
    siteVerifiedAt: iso(partner.siteVerifiedAt),
    suspendedAt: iso(partner.suspendedAt),
  };
}

function partnerLine(partner: PartnerRow): string {
  return [
    partner.id,
    JSON.stringify(partner.name),
    `owner ${partner.ownerEmail}`,
    partner.website ?? "no website",
    partner.siteVerifiedAt === null ? "unverified" : "verified",
    partner.listed ? "listed" : "unlisted",
    `${partner.activeKeys} keys`,
    partner.suspendedAt === null ? "active" : `suspended ${iso(partner.suspendedAt)}`,
  ].join("  ");
}
