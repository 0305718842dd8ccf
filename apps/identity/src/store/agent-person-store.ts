import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { Transaction } from "kysely";
import {
  agentsWithHosts,
  type HostRecord,
  type ListedAgent,
  type PendingAgentApproval,
  toHost,
} from "./agent-rows.ts";
import type { IdentityDatabase } from "./schema.ts";

type Trx = Transaction<IdentityDatabase>;

/**
 * The agent store's person-facing half: the approvals a person decides at `/device`, the hosts
 * and agents their dashboard lists, and the agents a partner saw.
 */
export function createAgentPersonStore(
  database: Pick<StoreDatabase<IdentityDatabase>, "db" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
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
      const agent = (await agentsWithHosts(reads, { agentId: code.agent_id }))[0];
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
      const agents = await agentsWithHosts(reads, { accountId });
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

async function hasPendingGrants(db: ReadOnlyDb<IdentityDatabase> | Trx, agentId: string) {
  const row = await db
    .selectFrom("agent_grants")
    .select("capability")
    .where("agent_id", "=", agentId)
    .where("status", "=", "pending")
    .executeTakeFirst();
  return row !== undefined;
}
