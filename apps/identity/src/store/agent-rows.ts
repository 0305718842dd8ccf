import type { ReadOnlyDb } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

type HostRow = IdentityDatabase["agent_hosts"];
type AgentRow = IdentityDatabase["agents"];

/** The agent store's records, and the reads the store and its person-facing half share. */

export interface HostRecord {
  id: string;
  accountId: string | null;
  name: string | null;
  thumbprint: string;
  publicJwk: JsonWebKey;
  status: HostRow["status"];
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface AgentRecord {
  id: string;
  hostId: string;
  accountId: string | null;
  name: string;
  thumbprint: string;
  publicJwk: JsonWebKey;
  /** As stored: `domain/agents.ts` tells an idle or outlived one as expired or revoked. */
  status: AgentRow["status"];
  createdAt: number;
  activatedAt: number | null;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** An agent with its host and the email of the person it acts for (null until approved). */
export interface AgentWithHost extends AgentRecord {
  host: HostRecord;
  email: string | null;
}

/** An agent as its person's dashboard lists it: with the partners that saw it. */
export interface ListedAgent extends AgentRecord {
  partners: Array<{
    partnerId: string;
    partnerName: string;
    firstAt: number;
    lastAt: number;
    count: number;
  }>;
}

/** An agent registration waiting for its person, as the approval page shows it. */
export interface PendingAgentApproval {
  deviceHash: string;
  agent: AgentRecord;
  host: HostRecord;
  clientAddress: string | null;
  createdAt: number;
  expiresAt: number;
}

/** Agents with their hosts (and their persons' emails), by agent, host or person. */
export async function agentsWithHosts(
  reads: ReadOnlyDb<IdentityDatabase>,
  where: { agentId: string } | { hostId: string } | { accountId: string },
): Promise<AgentWithHost[]> {
  let query = reads
    .selectFrom("agents")
    .innerJoin("agent_hosts", "agent_hosts.id", "agents.host_id")
    .leftJoin("accounts", "accounts.id", "agents.account_id")
    .selectAll("agents")
    .select([
      "agent_hosts.account_id as host_account_id",
      "agent_hosts.name as host_name",
      "agent_hosts.thumbprint as host_thumbprint",
      "agent_hosts.public_jwk as host_public_jwk",
      "agent_hosts.status as host_status",
      "agent_hosts.created_at as host_created_at",
      "agent_hosts.updated_at as host_updated_at",
      "agent_hosts.last_used_at as host_last_used_at",
      "agent_hosts.revoked_at as host_revoked_at",
      "accounts.email as email",
    ]);
  if ("agentId" in where) query = query.where("agents.id", "=", where.agentId);
  else if ("hostId" in where) query = query.where("agents.host_id", "=", where.hostId);
  else query = query.where("agent_hosts.account_id", "=", where.accountId);
  const rows = await query.orderBy("agents.created_at").orderBy("agents.id").execute();
  return rows.map((row) => ({
    ...toAgent(row),
    host: toHost({
      id: row.host_id,
      account_id: row.host_account_id,
      name: row.host_name,
      thumbprint: row.host_thumbprint,
      public_jwk: row.host_public_jwk,
      status: row.host_status,
      created_at: row.host_created_at,
      updated_at: row.host_updated_at,
      last_used_at: row.host_last_used_at,
      revoked_at: row.host_revoked_at,
    }),
    email: row.email ?? null,
  }));
}

export function toHost(row: HostRow): HostRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    thumbprint: row.thumbprint,
    publicJwk: JSON.parse(row.public_jwk),
    status: row.status,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

export function toAgent(row: AgentRow): AgentRecord {
  return {
    id: row.id,
    hostId: row.host_id,
    accountId: row.account_id,
    name: row.name,
    thumbprint: row.thumbprint,
    publicJwk: JSON.parse(row.public_jwk),
    status: row.status,
    createdAt: Number(row.created_at),
    activatedAt: row.activated_at === null ? null : Number(row.activated_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}
