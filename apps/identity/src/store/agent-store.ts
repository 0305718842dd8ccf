import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { Transaction } from "kysely";
import type { IdentityDatabase } from "./schema.ts";

type HostRow = IdentityDatabase["agent_hosts"];
type AgentRow = IdentityDatabase["agents"];
type DeviceCodeRow = IdentityDatabase["device_codes"];
type GrantRow = IdentityDatabase["agent_grants"];

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

type Trx = Transaction<IdentityDatabase>;

/**
 * Agents and their hosts (the Agent Auth Protocol's model): public keys, states and who saw
 * which agent. Never cached: every agent JWT and every token an agent minted reads its agent and
 * host here, so a revocation holds on the next request on every instance.
 */
export function createAgentStore(
  database: Pick<StoreDatabase<IdentityDatabase>, "db" | "write" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;

  async function agentsWithHosts(
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

  /** Revokes an agent (only `accountId`'s, when given); false when none was left to revoke. */
  async function revokeAgentWhere(
    agentId: string,
    at: number,
    accountId: string | null,
  ): Promise<boolean> {
    const result = await database.write((db) => {
      const query = db
        .updateTable("agents")
        .set({ status: "revoked", revoked_at: at })
        .where("id", "=", agentId)
        .where("status", "!=", "revoked");
      return (
        accountId === null ? query : query.where("account_id", "=", accountId)
      ).executeTakeFirst();
    });
    return result.numUpdatedRows > 0n;
  }

  return {
    async findHostByThumbprint(thumbprint: string): Promise<HostRecord | undefined> {
      const row = await reads
        .selectFrom("agent_hosts")
        .selectAll()
        .where("thumbprint", "=", thumbprint)
        .executeTakeFirst();
      return row && toHost(row);
    },

    async findAgent(agentId: string): Promise<AgentWithHost | undefined> {
      return (await agentsWithHosts({ agentId }))[0];
    },

    async findAgentOfHost(hostId: string, thumbprint: string): Promise<AgentRecord | undefined> {
      const row = await reads
        .selectFrom("agents")
        .selectAll()
        .where("host_id", "=", hostId)
        .where("thumbprint", "=", thumbprint)
        .executeTakeFirst();
      return row && toAgent(row);
    },

    /** How many agents a host has waiting for approval: registrations are bounded per host. */
    async countPendingAgents(hostId: string): Promise<number> {
      const row = await reads
        .selectFrom("agents")
        .select((eb) => eb.fn.countAll<number>().as("count"))
        .where("host_id", "=", hostId)
        .where("status", "=", "pending")
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },

    /**
     * A registration: the host when it is new, the agent when it is new, and the device code
     * its person approves it with, in one transaction.
     */
    async register(registration: {
      newHost: HostRow | null;
      newAgent: AgentRow | null;
      grants: GrantRow[];
      approval: DeviceCodeRow;
    }): Promise<void> {
      await database.transaction(async (trx) => {
        if (registration.newHost) {
          await trx.insertInto("agent_hosts").values(registration.newHost).execute();
        }
        if (registration.newAgent) {
          await trx.insertInto("agents").values(registration.newAgent).execute();
        }
        for (const grant of registration.grants) {
          await trx
            .insertInto("agent_grants")
            .values(grant)
            .onConflict((conflict) =>
              conflict.columns(["agent_id", "capability"]).doUpdateSet({
                status: "pending",
                constraints: grant.constraints,
                reason: grant.reason,
                updated_at: grant.updated_at,
              }),
            )
            .execute();
        }
        await trx.insertInto("device_codes").values(registration.approval).execute();
      });
    },

    async findPendingAgentApproval(
      userCodeHash: string,
      now: number,
    ): Promise<PendingAgentApproval | undefined> {
      const code = await reads
        .selectFrom("device_codes")
        .selectAll()
        .where("user_code_hash", "=", userCodeHash)
        .executeTakeFirst();
      if (!code?.agent_id || code.status !== "pending" || code.expires_at <= now) return undefined;
      const agent = (await agentsWithHosts({ agentId: code.agent_id }))[0];
      if (agent?.status !== "pending" && !(agent && (await hasPendingGrants(reads, agent.id)))) {
        return undefined;
      }
      return {
        deviceHash: code.device_hash,
        agent,
        host: agent.host,
        clientAddress: code.client_address,
        createdAt: code.created_at,
        expiresAt: code.expires_at,
      };
    },

    /**
     * Decides a pending registration, or an active agent's request for more capabilities, in
     * one transaction: approving links the host to the person (a host is one person's:
     * `other_account` when it is another's), makes host and agent active, and grants the pending
     * capabilities the person chose; the others, and all of them on a denial, are denied.
     * Denying a registration rejects the agent. The code is spent either way.
     */
    async decideAgentApproval(
      deviceHash: string,
      accountId: string,
      decision: "approve" | "deny",
      at: number,
      capabilities: readonly string[] | "all" = "all",
    ): Promise<"decided" | "gone" | "other_account"> {
      return database.transaction(async (trx) => {
        const code = await trx
          .selectFrom("device_codes")
          .selectAll()
          .where("device_hash", "=", deviceHash)
          .executeTakeFirst();
        if (!code?.agent_id || code.status !== "pending" || code.expires_at <= at) return "gone";
        const agent = await trx
          .selectFrom("agents")
          .selectAll()
          .where("id", "=", code.agent_id)
          .executeTakeFirst();
        const host =
          agent &&
          (await trx
            .selectFrom("agent_hosts")
            .selectAll()
            .where("id", "=", agent.host_id)
            .executeTakeFirst());
        const asking = agent?.status === "active" && (await hasPendingGrants(trx, agent.id));
        if (!agent || !host || (agent.status !== "pending" && !asking)) return "gone";
        if (host.status === "revoked" || host.status === "rejected") return "gone";
        if (host.account_id !== null && host.account_id !== accountId) return "other_account";
        const spent = await trx
          .updateTable("device_codes")
          .set({ status: "consumed", account_id: accountId })
          .where("device_hash", "=", deviceHash)
          .where("status", "=", "pending")
          .executeTakeFirst();
        if (spent.numUpdatedRows === 0n) return "gone";
        const granting = capabilities === "all" || capabilities.length > 0;
        if (decision === "approve" && granting) {
          const granting = trx
            .updateTable("agent_grants")
            .set({ status: "active", updated_at: at })
            .where("agent_id", "=", agent.id)
            .where("status", "=", "pending");
          await (capabilities === "all"
            ? granting
            : granting.where("capability", "in", capabilities)
          ).execute();
        }
        await trx
          .updateTable("agent_grants")
          .set({ status: "denied", updated_at: at })
          .where("agent_id", "=", agent.id)
          .where("status", "=", "pending")
          .execute();
        if (asking) return "decided";
        if (decision === "deny") {
          await trx
            .updateTable("agents")
            .set({ status: "rejected" })
            .where("id", "=", agent.id)
            .execute();
          return "decided";
        }
        await trx
          .updateTable("agent_hosts")
          .set({ status: "active", account_id: accountId, updated_at: at })
          .where("id", "=", host.id)
          .execute();
        await trx
          .updateTable("agents")
          .set({ status: "active", account_id: accountId, activated_at: at, last_used_at: null })
          .where("id", "=", agent.id)
          .execute();
        return "decided";
      });
    },

    /** Revokes an agent; false when it was revoked already (or never existed). */
    revokeAgent(agentId: string, at: number): Promise<boolean> {
      return revokeAgentWhere(agentId, at, null);
    },

    /** Revokes a host and every agent under it, in one transaction: how many agents it revoked. */
    async revokeHost(hostId: string, at: number): Promise<number> {
      return database.transaction(async (trx) => revokeHostIn(trx, hostId, at));
    },

    /** The person's own agent, revoked; false when they have no such agent not yet revoked. */
    revokeAgentOfAccount(accountId: string, agentId: string, at: number): Promise<boolean> {
      return revokeAgentWhere(agentId, at, accountId);
    },

    /** The person's own host, revoked with its agents; null when they have no such host. */
    async revokeHostOfAccount(
      accountId: string,
      hostId: string,
      at: number,
    ): Promise<number | null> {
      return database.transaction(async (trx) => {
        const host = await trx
          .selectFrom("agent_hosts")
          .select("id")
          .where("id", "=", hostId)
          .where("account_id", "=", accountId)
          .executeTakeFirst();
        return host ? revokeHostIn(trx, hostId, at) : null;
      });
    },

    /** Replaces an agent's key; false when another agent of its host has that key. */
    async rotateAgentKey(agentId: string, jwk: JsonWebKey, thumbprint: string): Promise<boolean> {
      return database.transaction(async (trx) => {
        const agent = await trx
          .selectFrom("agents")
          .select("host_id")
          .where("id", "=", agentId)
          .executeTakeFirst();
        if (!agent) return false;
        const taken = await trx
          .selectFrom("agents")
          .select("id")
          .where("host_id", "=", agent.host_id)
          .where("thumbprint", "=", thumbprint)
          .executeTakeFirst();
        if (taken) return false;
        await trx
          .updateTable("agents")
          .set({ public_jwk: JSON.stringify(jwk), thumbprint })
          .where("id", "=", agentId)
          .execute();
        return true;
      });
    },

    /** Replaces a host's key (its identifier with it); false when another host has that key. */
    async rotateHostKey(
      hostId: string,
      jwk: JsonWebKey,
      thumbprint: string,
      at: number,
    ): Promise<boolean> {
      return database.transaction(async (trx) => {
        const taken = await trx
          .selectFrom("agent_hosts")
          .select("id")
          .where("thumbprint", "=", thumbprint)
          .executeTakeFirst();
        if (taken) return false;
        await trx
          .updateTable("agent_hosts")
          .set({ public_jwk: JSON.stringify(jwk), thumbprint, updated_at: at })
          .where("id", "=", hostId)
          .execute();
        return true;
      });
    },

    /** Sets a stored agent's state, and its activation time when it becomes active. */
    async setAgentStatus(agentId: string, status: AgentRow["status"], at: number): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("agents")
          .set({
            status,
            ...(status === "active" && { activated_at: at, last_used_at: null }),
            ...(status === "revoked" && { revoked_at: at }),
          })
          .where("id", "=", agentId)
          .execute(),
      );
    },

    /** Records last use times gathered in memory (agents and hosts), in one transaction. */
    async recordUse(uses: {
      agents: ReadonlyMap<string, number>;
      hosts: ReadonlyMap<string, number>;
    }): Promise<void> {
      if (uses.agents.size === 0 && uses.hosts.size === 0) return;
      await database.transaction(async (trx) => {
        for (const [table, map] of [
          ["agents", uses.agents],
          ["agent_hosts", uses.hosts],
        ] as const) {
          for (const [id, at] of [...map].sort(([a], [b]) => a.localeCompare(b))) {
            await trx
              .updateTable(table)
              .set({ last_used_at: at })
              .where("id", "=", id)
              .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", at)]))
              .execute();
          }
        }
      });
    },

    /** The person's hosts, each with its agents and the partners that saw each. */
    async listHostsOfAccount(
      accountId: string,
    ): Promise<Array<HostRecord & { agents: ListedAgent[] }>> {
      const hostRows = await reads
        .selectFrom("agent_hosts")
        .selectAll()
        .where("account_id", "=", accountId)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      const agents = await agentsWithHosts({ accountId });
      const activity = await reads
        .selectFrom("agent_activity")
        .innerJoin("agents", "agents.id", "agent_activity.agent_id")
        .innerJoin("partners", "partners.id", "agent_activity.partner_id")
        .select([
          "agent_activity.agent_id as agentId",
          "agent_activity.partner_id as partnerId",
          "partners.name as partnerName",
          "agent_activity.first_at as firstAt",
          "agent_activity.last_at as lastAt",
          "agent_activity.count as count",
        ])
        .where("agents.account_id", "=", accountId)
        .orderBy("agent_activity.last_at", "desc")
        .execute();
      return hostRows.map((row) => ({
        ...toHost(row),
        agents: agents
          .filter((agent) => agent.hostId === row.id)
          .map(({ host: _host, email: _email, ...agent }) => ({
            ...agent,
            partners: activity
              .filter((seen) => seen.agentId === agent.id)
              .map(({ agentId: _agent, ...seen }) => ({
                ...seen,
                firstAt: Number(seen.firstAt),
                lastAt: Number(seen.lastAt),
                count: Number(seen.count),
              })),
          })),
      }));
    },

    /** The agents a partner verified, with their person's email: its usage page. */
    async listAgentActivityOfPartner(partnerId: string): Promise<
      Array<{
        agentId: string;
        agentName: string;
        email: string;
        firstAt: number;
        lastAt: number;
        count: number;
      }>
    > {
      const rows = await reads
        .selectFrom("agent_activity")
        .innerJoin("agents", "agents.id", "agent_activity.agent_id")
        .innerJoin("accounts", "accounts.id", "agents.account_id")
        .select([
          "agents.id as agentId",
          "agents.name as agentName",
          "accounts.email as email",
          "agent_activity.first_at as firstAt",
          "agent_activity.last_at as lastAt",
          "agent_activity.count as count",
        ])
        .where("agent_activity.partner_id", "=", partnerId)
        .orderBy("agent_activity.last_at", "desc")
        .limit(200)
        .execute();
      return rows.map((row) => ({
        ...row,
        firstAt: Number(row.firstAt),
        lastAt: Number(row.lastAt),
        count: Number(row.count),
      }));
    },
  };
}

export type AgentStore = ReturnType<typeof createAgentStore>;

async function hasPendingGrants(db: ReadOnlyDb<IdentityDatabase> | Trx, agentId: string) {
  const row = await db
    .selectFrom("agent_grants")
    .select("capability")
    .where("agent_id", "=", agentId)
    .where("status", "=", "pending")
    .executeTakeFirst();
  return row !== undefined;
}

async function revokeHostIn(trx: Trx, hostId: string, at: number): Promise<number> {
  await trx
    .updateTable("agent_hosts")
    .set({ status: "revoked", revoked_at: at, updated_at: at })
    .where("id", "=", hostId)
    .execute();
  const revoked = await trx
    .updateTable("agents")
    .set({ status: "revoked", revoked_at: at })
    .where("host_id", "=", hostId)
    .where("status", "!=", "revoked")
    .executeTakeFirst();
  return Number(revoked.numUpdatedRows);
}

function toHost(row: HostRow): HostRecord {
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

function toAgent(row: AgentRow): AgentRecord {
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
