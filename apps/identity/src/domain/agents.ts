import type { JWTPayload } from "jose";
import type { IdentityContext, Needs } from "../context.ts";
import type { AgentRecord, AgentStore, AgentWithHost, HostRecord } from "../store/agent-store.ts";
import { publicEd25519Key, readJwt, thumbprintOf, verifyJwt } from "./agent-jwt.ts";

/**
 * Agents as the Agent Auth Protocol (v1.0-draft) has them: a person → their hosts (a client
 * environment, its own Ed25519 key) → agents (each its own key, name, state and lifetimes). A
 * host authenticates with a `host+jwt`, an agent with an `agent+jwt`, each used once on every
 * instance (its `jti` spent in the store the rate limits share). Delegated agents only: every
 * new agent waits for its person to approve it in the browser (RFC 8628's page, `/device`).
 */

/** How long an agent lives: idle (from its last use or activation), and at most (from creation). */
export interface AgentLifetimes {
  idleMs: number;
  absoluteMs: number;
}

export type AgentState = "pending" | "active" | "expired" | "revoked" | "rejected";

/** A refusal in the protocol's own form (section 5.13): `{ error, message }` with its status. */
export interface AgentAuthRefusal {
  ok: false;
  status: 400 | 401 | 403 | 404 | 409 | 429;
  error: string;
  message: string;
}

/** How long a spent `jti` is remembered: past the longest life a JWT may claim, and its skew. */
const JTI_MEMORY_MS = 10 * 60_000;

/**
 * An agent's state as it stands now: what is stored, but an active agent past its absolute
 * lifetime is revoked and one idle longer than its idle lifetime is expired (section 2.4).
 */
export function agentState(
  agent: Pick<AgentRecord, "status" | "createdAt" | "activatedAt" | "lastUsedAt">,
  lifetimes: AgentLifetimes,
  now: number,
): AgentState {
  if (agent.status !== "active") return agent.status;
  if (now >= agent.createdAt + lifetimes.absoluteMs) return "revoked";
  return now >= lastActiveAt(agent) + lifetimes.idleMs ? "expired" : "active";
}

/** When an active agent expires if it is not used again: its idle deadline. */
export function agentExpiresAt(agent: AgentRecord, lifetimes: AgentLifetimes): number {
  return Math.min(lastActiveAt(agent) + lifetimes.idleMs, agent.createdAt + lifetimes.absoluteMs);
}

/** Where the idle clock starts: the agent's last use, or its last activation. */
function lastActiveAt(
  agent: Pick<AgentRecord, "createdAt" | "activatedAt" | "lastUsedAt">,
): number {
  return Math.max(agent.lastUsedAt ?? 0, agent.activatedAt ?? agent.createdAt);
}

/**
 * Keeps agents' and hosts' last use without a write on the request path: gathered in memory and
 * written every few seconds. An agent used here moments ago is not idle, whatever the row says.
 */
export function createAgentUseRecorder(store: AgentStore, onError: (error: unknown) => void) {
  let agents = new Map<string, number>();
  let hosts = new Map<string, number>();
  async function flush(): Promise<void> {
    if (agents.size === 0 && hosts.size === 0) return;
    const batch = { agents, hosts };
    agents = new Map();
    hosts = new Map();
    await store.recordUse(batch);
  }
  const timer = setInterval(() => flush().catch(onError), 5_000);
  timer.unref();
  return {
    agent(id: string, at: number): void {
      agents.set(id, at);
    },
    host(id: string, at: number): void {
      hosts.set(id, at);
    },
    /** The last use recorded here and not written yet. */
    pendingUse(agentId: string): number | undefined {
      return agents.get(agentId);
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}

export type AgentUseRecorder = ReturnType<typeof createAgentUseRecorder>;

export type AgentCtx = Needs<"agents" | "agentUse" | "agentLifetimes" | "seen" | "clock">;

/** An agent's state now, counting a use this instance has not written yet. */
export function stateNow(ctx: AgentCtx, agent: AgentRecord, now: number): AgentState {
  const pending = ctx.agentUse.pendingUse(agent.id);
  const lastUsedAt = Math.max(agent.lastUsedAt ?? 0, pending ?? 0) || null;
  return agentState({ ...agent, lastUsedAt }, ctx.agentLifetimes, now);
}

/** Spends a JWT's `jti` for its signer: true the first time, on every instance. */
function spendJti(ctx: AgentCtx, signer: string, jti: string): Promise<boolean> {
  return ctx.seen.seenOnce(`aa:${signer}:${jti}`, JTI_MEMORY_MS);
}

export type HostJudgement =
  | {
      ok: true;
      /** The host, or null when the JWT's key is new: a registration makes it. */
      host: HostRecord | null;
      thumbprint: string;
      jwk: JsonWebKey;
      claims: JWTPayload;
    }
  | AgentAuthRefusal;

/**
 * Section 4.5.1: a host's JWT, with `aud` the issuer, signed by the key its `iss` is the
 * thumbprint of — the stored key of a known host, or for a registration (`registering`) the
 * `host_public_key` it carries. Its `jti` is spent last. A pending host may only register, and
 * read the status of its agents (`readsStatus`): that is how it learns it was approved.
 */
export async function judgeHostJwt(
  ctx: AgentCtx,
  token: string | undefined,
  issuer: string,
  registering = false,
  readsStatus = false,
): Promise<HostJudgement> {
  if (!token) return invalidJwt("Send a host JWT as Authorization: Bearer");
  const read = readJwt(token, "host+jwt");
  if (typeof read === "string") return invalidJwt(read);
  const iss = read.payload.iss;
  if (typeof iss !== "string") return invalidJwt("The JWT's iss must be its key's thumbprint");
  const host = (await ctx.agents.findHostByThumbprint(iss)) ?? null;
  let jwk: JsonWebKey;
  if (host) {
    jwk = host.publicJwk;
  } else {
    if (!registering) return invalidJwt("No host has this key");
    if (read.payload.host_jwks_url !== undefined) {
      return refusal(
        400,
        "invalid_request",
        "host_jwks_url is not supported: send host_public_key",
      );
    }
    const presented = publicEd25519Key(read.payload.host_public_key);
    if (!presented) {
      return refusal(400, "unsupported_algorithm", "host_public_key must be a public Ed25519 JWK");
    }
    if ((await thumbprintOf(presented)) !== iss) {
      return invalidJwt("The JWT's iss is not the thumbprint of host_public_key");
    }
    jwk = presented;
  }
  const now = ctx.clock();
  const verified = await verifyJwt(token, "host+jwt", jwk, (aud) => aud === issuer, now);
  if (!verified.ok) return invalidJwt(verified.check);
  if (host?.status === "revoked") return refusal(403, "host_revoked", "The host has been revoked");
  if (host?.status === "rejected") return refusal(403, "host_rejected", "The host was rejected");
  if (host?.status === "pending" && !registering && !readsStatus) {
    return refusal(403, "host_pending", "The host is waiting for its person's approval");
  }
  if (!(await spendJti(ctx, `host:${iss}`, verified.claims.jti))) {
    return invalidJwt("The JWT was used already (its jti)");
  }
  if (host) ctx.agentUse.host(host.id, now);
  return { ok: true, host, thumbprint: iss, jwk, claims: verified.claims };
}

export type AgentJwtVerdict =
  | {
      ok: true;
      agent: AgentWithHost;
      accountId: string;
      email: string;
      claims: JWTPayload & { jti: string; exp: number; aud: string };
    }
  | AgentAuthRefusal;

/**
 * Section 4.5: an agent's JWT (`iss` its host's thumbprint, `sub` its id), with an `aud` that
 * `audience` accepts, signed by the agent's key, from an active agent of an active host; its
 * `jti` is spent last, once on every instance. Every check reads the rows: a revocation holds on
 * the next request.
 */
export async function judgeAgentJwt(
  ctx: AgentCtx,
  token: string,
  audience: (aud: string) => boolean,
): Promise<AgentJwtVerdict> {
  const read = readJwt(token, "agent+jwt");
  if (typeof read === "string") return invalidJwt(read);
  const { iss, sub } = read.payload;
  if (typeof iss !== "string" || typeof sub !== "string") {
    return invalidJwt("The JWT needs iss (its host's thumbprint) and sub (the agent's id)");
  }
  const agent = await ctx.agents.findAgent(sub);
  if (!agent || agent.host.thumbprint !== iss) {
    return invalidJwt("No agent of this host has this id");
  }
  const now = ctx.clock();
  const verified = await verifyJwt(token, "agent+jwt", agent.publicJwk, audience, now);
  if (!verified.ok) return invalidJwt(verified.check);
  const refused = refusalOfState(ctx, agent, now);
  if (refused) return refused;
  if (!agent.accountId || !agent.email) return refusal(403, "agent_pending", "Not approved yet");
  if (!(await spendJti(ctx, `agent:${agent.id}`, verified.claims.jti))) {
    return invalidJwt("The JWT was used already (its jti)");
  }
  ctx.agentUse.agent(agent.id, now);
  return {
    ok: true,
    agent,
    accountId: agent.accountId,
    email: agent.email,
    claims: verified.claims,
  };
}

/** Why an agent (and its host) cannot act now, or null when it can. */
function refusalOfState(ctx: AgentCtx, agent: AgentWithHost, now: number): AgentAuthRefusal | null {
  if (agent.host.status === "revoked")
    return refusal(403, "host_revoked", "The host has been revoked");
  if (agent.host.status !== "active")
    return refusal(403, "host_pending", "The host is not approved");
  const state = stateNow(ctx, agent, now);
  switch (state) {
    case "active":
      return null;
    case "expired":
      return refusal(403, "agent_expired", "The agent expired: reactivate it");
    case "pending":
      return refusal(403, "agent_pending", "The agent is waiting for its person's approval");
    case "rejected":
      return refusal(403, "agent_rejected", "The agent's person denied it");
    default:
      return refusal(403, "agent_revoked", "The agent has been revoked");
  }
}

/**
 * The agent a session token names, when it may still act for `accountId`: active, under an
 * active host. Read from the rows on every call, so its revocation holds on the next verify.
 */
export async function findActiveAgent(
  ctx: AgentCtx,
  agentId: string,
  accountId: string,
): Promise<{ id: string; name: string } | undefined> {
  const agent = await ctx.agents.findAgent(agentId);
  if (!agent || agent.accountId !== accountId) return undefined;
  if (refusalOfState(ctx, agent, ctx.clock())) return undefined;
  ctx.agentUse.agent(agent.id, ctx.clock());
  return { id: agent.id, name: agent.name };
}

/** Whether an agent JWT's `aud` names one of a partner's resources (by its origin). */
export function audienceOfResources(resources: readonly string[]): (aud: string) => boolean {
  const origins = new Set(resources.map(originOf).filter((origin) => origin !== null));
  return (aud) => {
    const origin = originOf(aud);
    return origin !== null && origins.has(origin);
  };
}

export function originOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.origin : null;
  } catch {
    return null;
  }
}

export function refusal(
  status: AgentAuthRefusal["status"],
  error: string,
  message: string,
): AgentAuthRefusal {
  return { ok: false, status, error, message };
}

function invalidJwt(check: string): AgentAuthRefusal {
  return refusal(401, "invalid_jwt", `Invalid JWT: ${check}`);
}

/** The context the agent endpoints need beyond the agent parts. */
export type AgentsContext = AgentCtx & Needs<"keys" | "audit">;
export type { IdentityContext };
