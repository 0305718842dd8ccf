import type { Needs } from "../context.ts";
import { randomSecret } from "../infra/crypto.ts";
import type { AgentRecord, AgentWithHost, HostRecord } from "../store/agent-store.ts";
import { pendingGrantRows, type RequestedGrant } from "../store/capability-store.ts";
import { publicEd25519Key, thumbprintOf } from "./agent-jwt.ts";
import {
  type AgentAuthRefusal,
  type AgentCtx,
  agentExpiresAt,
  type HostJudgement,
  refusal,
  stateNow,
} from "./agents.ts";
import { DEVICE_CODE_TIMES, displayableClientName, drawDeviceCode } from "./device-login.ts";

/**
 * An agent's life under its host (Agent Auth Protocol sections 5.3, 5.5, 5.6): registration and
 * its approval, the status a host reads, reactivation. Judging JWTs is `agents.ts`'s.
 */

/** Agents one host may have waiting for approval: what an unknown key can make is bounded. */
const MAX_PENDING_PER_HOST = 5;
const MAX_NAME_CHARS = 100;

export interface Registration {
  name: string;
  hostName?: string | undefined;
  mode?: string | undefined;
  /** The grants it asks for, as `readRequestedGrants` read them. */
  grants: RequestedGrant[];
  reason?: string | undefined;
}

type RegisterResult =
  | { ok: true; agent: AgentRecord; hostId: string; userCode: string }
  | AgentAuthRefusal;

/**
 * Section 5.3: registers an agent under the host of a verified host JWT (a new host is made
 * pending, unlinked). Every new agent waits for its person's approval in the browser, even under
 * a host they approved before: an agent is a new actor, and approving it is the person's act
 * (section 8.10). A pending agent with the same key gets a fresh approval; any other is 409.
 */
export async function registerAgent(
  ctx: AgentCtx & Needs<"keys">,
  host: Extract<HostJudgement, { ok: true }>,
  registration: Registration,
  clientAddress: string,
): Promise<RegisterResult> {
  if (host.claims.agent_jwks_url !== undefined) {
    return refusal(
      400,
      "invalid_request",
      "agent_jwks_url is not supported: send agent_public_key",
    );
  }
  const agentJwk = publicEd25519Key(host.claims.agent_public_key);
  if (!agentJwk) {
    return refusal(400, "unsupported_algorithm", "agent_public_key must be a public Ed25519 JWK");
  }
  if ((registration.mode ?? "delegated") !== "delegated") {
    return refusal(400, "unsupported_mode", "Only delegated agents are supported");
  }
  const name = displayableName(registration.name);
  if (!name) return refusal(400, "invalid_request", "name must be 1 to 100 visible characters");
  const hostName = registration.hostName ? displayableName(registration.hostName) : null;
  const now = ctx.clock();
  const thumbprint = await thumbprintOf(agentJwk);
  const hostId = host.host?.id ?? newId("hst");
  const existing = host.host ? await ctx.agents.findAgentOfHost(hostId, thumbprint) : undefined;
  if (existing && existing.status !== "pending") {
    return refusal(409, "agent_exists", "An agent with this key is registered already");
  }
  if (
    !existing &&
    host.host &&
    (await ctx.agents.countPendingAgents(hostId)) >= MAX_PENDING_PER_HOST
  ) {
    return refusal(429, "rate_limited", "Too many agents of this host wait for approval");
  }
  const agentId = existing?.id ?? newId("agt");
  const shownAs = `${name}${hostName ? ` on ${hostName}` : ""}`;
  const { userCode, row } = drawDeviceCode(ctx, shownAs, clientAddress, agentId);
  const agentRow = {
    id: agentId,
    host_id: hostId,
    account_id: null,
    name,
    thumbprint,
    public_jwk: JSON.stringify(agentJwk),
    status: "pending" as const,
    created_at: now,
    activated_at: null,
    last_used_at: null,
    revoked_at: null,
  };
  await ctx.agents.register({
    newHost: host.host
      ? null
      : {
          id: hostId,
          account_id: null,
          name: hostName,
          thumbprint: host.thumbprint,
          public_jwk: JSON.stringify(host.jwk),
          status: "pending",
          created_at: now,
          updated_at: now,
          last_used_at: now,
          revoked_at: null,
        },
    newAgent: existing ? null : agentRow,
    grants: pendingGrantRows(agentId, registration.grants, registration.reason ?? null, now),
    approval: row,
  });
  const agent = existing ?? (await ctx.agents.findAgent(agentId));
  if (!agent) throw new Error("the registered agent is gone");
  return { ok: true, agent, hostId, userCode };
}

/** The approval object of a pending agent (section 7.1): the code its person types at `/device`. */
export function approvalOf(issuer: string, userCode: string) {
  return {
    method: "device_authorization",
    verification_uri: `${issuer}/device`,
    // Fills the code in only: the person still confirms on the page (as for a device login).
    verification_uri_complete: `${issuer}/device?code=${encodeURIComponent(userCode)}`,
    user_code: userCode,
    expires_in: DEVICE_CODE_TIMES.expiresIn,
    interval: DEVICE_CODE_TIMES.interval,
  };
}

/** Section 5.5: an agent as its status endpoint tells it, with its grants as shown. */
export function statusOf(ctx: AgentCtx, agent: AgentRecord, grants: object[]) {
  const now = ctx.clock();
  const status = stateNow(ctx, agent, now);
  return {
    agent_id: agent.id,
    host_id: agent.hostId,
    name: agent.name,
    status,
    mode: "delegated",
    agent_capability_grants: grants,
    ...(agent.accountId && { user_id: agent.accountId }),
    ...(agent.activatedAt !== null && { activated_at: iso(agent.activatedAt) }),
    created_at: iso(agent.createdAt),
    ...(agent.lastUsedAt !== null && { last_used_at: iso(agent.lastUsedAt) }),
    ...(status === "active" && { expires_at: iso(agentExpiresAt(agent, ctx.agentLifetimes)) }),
  };
}

/**
 * The agent `agentId` of `host`, or 404 `agent_not_found` — also for another host's agent, so a
 * host learns nothing of agents that are not its own.
 */
export async function agentOfHost(
  ctx: AgentCtx,
  host: HostRecord,
  agentId: unknown,
): Promise<AgentWithHost | AgentAuthRefusal> {
  const agent = typeof agentId === "string" ? await ctx.agents.findAgent(agentId) : undefined;
  if (!agent || agent.hostId !== host.id) return refusal(404, "agent_not_found", "No such agent");
  return agent;
}

/**
 * Section 5.6: an expired agent active again (its idle clock restarts), with the grants it
 * held; one past its absolute lifetime is revoked instead.
 */
export async function reactivateAgent(
  ctx: AgentCtx,
  agent: AgentRecord,
): Promise<{ ok: true } | AgentAuthRefusal> {
  const now = ctx.clock();
  const state = stateNow(ctx, agent, now);
  if (state === "active") return { ok: true };
  if (state === "expired") {
    await ctx.agents.setAgentStatus(agent.id, "active", now);
    return { ok: true };
  }
  if (state === "revoked" && agent.status === "active") {
    await ctx.agents.setAgentStatus(agent.id, "revoked", now);
    return refusal(403, "absolute_lifetime_exceeded", "The agent outlived its lifetime");
  }
  return refusal(403, `agent_${state}`, `The agent is ${state}`);
}

/** A name as `displayableClientName` cleans it, or null when nothing visible is left of it. */
function displayableName(name: string): string | null {
  const shown = displayableClientName(name.slice(0, MAX_NAME_CHARS * 2));
  const blank = shown === displayableClientName("");
  return blank && name.trim() !== shown ? null : shown;
}

function newId(prefix: "agt" | "hst"): string {
  return `${prefix}_${randomSecret(16)}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
