import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { Transaction } from "kysely";
import { createAgentPersonStore } from "./agent-person-store.ts";
import {
  type AgentRecord,
  type AgentWithHost,
  agentsWithHosts,
  type HostRecord,
  toAgent,
  toHost,
} from "./agent-rows.ts";
import type { IdentityDatabase } from "./schema.ts";

export type {
  AgentRecord,
  AgentWithHost,
  HostRecord,
  ListedAgent,
  PendingAgentApproval,
} from "./agent-rows.ts";

type HostRow = IdentityDatabase["agent_hosts"];
type AgentRow = IdentityDatabase["agents"];
type DeviceCodeRow = IdentityDatabase["device_codes"];
type GrantRow = IdentityDatabase["agent_grants"];

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
    ...createAgentPersonStore(database),
    async findHostByThumbprint(thumbprint: string): Promise<HostRecord | undefined> {
      const row = await reads
        .selectFrom("agent_hosts")
        .selectAll()
        .where("thumbprint", "=", thumbprint)
        .executeTakeFirst();
      return row && toHost(row);
    },

    async findAgent(agentId: string): Promise<AgentWithHost | undefined> {
      return (await agentsWithHosts(reads, { agentId }))[0];
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
  };
}

export type AgentStore = ReturnType<typeof createAgentStore>;

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
