import type { Needs } from "../context.ts";
import type { AgentWithHost } from "../store/agent-store.ts";
import { hashUserCode } from "./device-login.ts";

/** What a person's pages do with their agents: list, revoke, approve; and a partner's view. */

/** A person's hosts, each with its agents and the partners that saw each: their dashboard. */
export function listAgentsOfPerson(ctx: Needs<"agents">, accountId: string) {
  return ctx.agents.listHostsOfAccount(accountId);
}

/** The person's own agent `agentId`, or undefined (another person's is not theirs to see). */
export async function findAgentOfPerson(
  ctx: Needs<"agents">,
  accountId: string,
  agentId: string,
): Promise<AgentWithHost | undefined> {
  const agent = await ctx.agents.findAgent(agentId);
  return agent?.accountId === accountId ? agent : undefined;
}

/** Revokes the person's own agent; false when they have no such agent not yet revoked. */
export function revokeAgentOfPerson(
  ctx: Needs<"agents" | "clock">,
  accountId: string,
  agentId: string,
): Promise<boolean> {
  return ctx.agents.revokeAgentOfAccount(accountId, agentId, ctx.clock());
}

/** Revokes the person's own host with its agents: how many; null when they have no such host. */
export function revokeHostOfPerson(
  ctx: Needs<"agents" | "clock">,
  accountId: string,
  hostId: string,
): Promise<number | null> {
  return ctx.agents.revokeHostOfAccount(accountId, hostId, ctx.clock());
}

/** The agents a partner saw, per person, counting what this instance holds in memory too. */
export async function agentsSeenByPartner(ctx: Needs<"agents" | "usage">, partnerId: string) {
  await ctx.usage.flush();
  return ctx.agents.listAgentActivityOfPartner(partnerId);
}

/** The agent registration a typed user code approves, if it is one still waiting. */
export function findPendingAgentApproval(ctx: Needs<"agents" | "keys" | "clock">, code: string) {
  return ctx.agents.findPendingAgentApproval(hashUserCode(ctx, code), ctx.clock());
}

/**
 * The person's decision on a pending registration or request (`AgentStore.decideAgentApproval`):
 * on approval, the capabilities they chose of those asked for.
 */
export function decideAgentApproval(
  ctx: Needs<"agents" | "clock">,
  deviceHash: string,
  accountId: string,
  decision: "approve" | "deny",
  capabilities: readonly string[] | "all",
) {
  return ctx.agents.decideAgentApproval(deviceHash, accountId, decision, ctx.clock(), capabilities);
}
