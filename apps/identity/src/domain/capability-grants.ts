import type { Needs } from "../context.ts";
import type { AgentWithHost } from "../store/agent-store.ts";
import type {
  CapabilityRecord,
  Constraints,
  GrantRecord,
  RequestedGrant,
} from "../store/capability-store.ts";
import { isPrimitive } from "./capabilities.ts";
import { drawDeviceCode } from "./device-login.ts";

/** Agents' grants of capabilities: as the protocol shows them, as a person approves them. */

/**
 * A grant as sections 5.3 and 5.5 show it: an active one with its capability's fields (and its
 * location, where the agent executes it), a pending one by name, a denied one with why. Grants
 * of a capability its partner withdrew are left out: they are inoperative (section 2.12).
 */
export function grantViews(grants: GrantRecord[], offered: Map<string, CapabilityRecord>) {
  return grants.flatMap((grant) => {
    const capability = offered.get(grant.capability);
    if (!capability) return [];
    if (grant.status === "pending") return [{ capability: grant.capability, status: "pending" }];
    if (grant.status === "denied") {
      return [{ capability: grant.capability, status: "denied", reason: "Its person denied it" }];
    }
    return [
      {
        capability: grant.capability,
        status: "active",
        description: capability.description,
        location: capability.location,
        ...(grant.constraints && { constraints: grant.constraints }),
        ...(capability.input && { input: capability.input }),
        ...(capability.output && { output: capability.output }),
      },
    ];
  });
}

/** The grants of `agentId`, as `grantViews` shows them. */
export async function grantsOfAgent(ctx: Needs<"capabilities">, agentId: string) {
  const grants = await ctx.capabilities.grantsOf(agentId);
  const offered = new Map<string, CapabilityRecord>();
  for (const grant of grants) {
    const capability = await ctx.capabilities.find(grant.capability);
    if (capability) offered.set(capability.name, capability);
  }
  return grantViews(grants, offered);
}

/**
 * An agent's grants of the partner's own capabilities, compact as introspection has them
 * (section 5.12): a partner learns nothing of what the agent may do elsewhere.
 */
export async function grantsOfPartner(
  ctx: Needs<"capabilities">,
  partnerId: string,
  agentId: string,
) {
  const offered = new Set((await ctx.capabilities.ofPartner(partnerId)).map((c) => c.name));
  return (await ctx.capabilities.grantsOf(agentId))
    .filter((grant) => offered.has(grant.capability))
    .map((grant) => ({ capability: grant.capability, status: grant.status }));
}

/**
 * Section 5.4: an active agent asks for more. Grants it holds active already are answered as
 * they are; the others wait, with the device code its person approves them with at `/device`.
 */
export async function requestCapabilities(
  ctx: Needs<"capabilities" | "clock" | "keys">,
  agent: AgentWithHost,
  grants: RequestedGrant[],
  reason: string | null,
  clientAddress: string,
): Promise<{ userCode: string | null }> {
  const held = new Set(
    (await ctx.capabilities.grantsOf(agent.id))
      .filter((grant) => grant.status === "active")
      .map((grant) => grant.capability),
  );
  const asked = grants.filter((grant) => !held.has(grant.capability));
  if (asked.length === 0) return { userCode: null };
  const shownAs = `${agent.name}${agent.host.name ? ` on ${agent.host.name}` : ""}`;
  const { userCode, row } = drawDeviceCode(ctx, shownAs, clientAddress, agent.id);
  await ctx.capabilities.request(agent.id, asked, reason, row);
  return { userCode };
}

/** What an agent waits for its person to approve: each capability, whose, and how narrowed. */
export async function pendingGrantsOf(ctx: Needs<"capabilities">, agentId: string) {
  const pending = (await ctx.capabilities.grantsOf(agentId)).filter((g) => g.status === "pending");
  const shown = [];
  for (const grant of pending) {
    const capability = await ctx.capabilities.find(grant.capability);
    if (!capability) continue;
    shown.push({
      name: capability.name,
      description: capability.description,
      partnerName: capability.partnerName,
      limits: grant.constraints ? constraintsInWords(grant.constraints) : null,
    });
  }
  return shown;
}

/** Constraints as a person reads them: "amount at most 1000; currency one of USD, EUR". */
export function constraintsInWords(constraints: Constraints): string {
  const words: Record<string, string> = {
    max: "at most",
    min: "at least",
    in: "one of",
    not_in: "none of",
  };
  return Object.entries(constraints)
    .map(([field, constraint]) =>
      isPrimitive(constraint)
        ? `${field} exactly ${JSON.stringify(constraint)}`
        : Object.entries(constraint as Record<string, unknown>)
            .map(
              ([operator, operand]) =>
                `${field} ${words[operator] ?? operator} ${
                  Array.isArray(operand)
                    ? operand.map((v) => JSON.stringify(v)).join(", ")
                    : operand
                }`,
            )
            .join(", "),
    )
    .join("; ");
}
