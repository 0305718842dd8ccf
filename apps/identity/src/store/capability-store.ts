import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

type CapabilityRow = IdentityDatabase["partner_capabilities"];
type GrantRow = IdentityDatabase["agent_grants"];
type DeviceCodeRow = IdentityDatabase["device_codes"];

/** A capability as its partner declared it (Agent Auth Protocol section 2.12). */
export interface CapabilityRecord {
  name: string;
  partnerId: string;
  partnerName: string;
  description: string;
  location: string;
  input: Record<string, unknown> | null;
  output: Record<string, unknown> | null;
}

/** A grant's constraints (section 2.13): per top-level argument, an exact value or operators. */
export type Constraints = Record<string, unknown>;

/** An agent's grant of a capability (section 3.3). */
export interface GrantRecord {
  capability: string;
  status: GrantRow["status"];
  constraints: Constraints | null;
  reason: string | null;
}

/** A grant as it is asked for: the capability and the constraints the agent proposes. */
export interface RequestedGrant {
  capability: string;
  constraints: Constraints | null;
}

/**
 * Capabilities partners declare and the grants agents hold of them. Never cached, as agents are
 * not: a grant denied or a capability withdrawn holds on the next execution, on every instance.
 */
export function createCapabilityStore(
  database: Pick<StoreDatabase<IdentityDatabase>, "db" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;

  function capabilities() {
    return reads
      .selectFrom("partner_capabilities")
      .innerJoin("partners", "partners.id", "partner_capabilities.partner_id")
      .selectAll("partner_capabilities")
      .select("partners.name as partner_name")
      .where("partners.suspended_at", "is", null)
      .orderBy("partner_capabilities.name");
  }

  return {
    /**
     * Makes `rows` the whole of the partner's capabilities, in one transaction: those it no
     * longer declares are withdrawn. Names another partner holds are refused, nothing written.
     */
    async declare(
      partnerId: string,
      rows: CapabilityRow[],
    ): Promise<{ ok: true } | { ok: false; taken: string[] }> {
      return database.transaction(async (trx) => {
        const names = rows.map((row) => row.name);
        const taken =
          names.length === 0
            ? []
            : await trx
                .selectFrom("partner_capabilities")
                .select("name")
                .where("name", "in", names)
                .where("partner_id", "!=", partnerId)
                .execute();
        if (taken.length > 0) return { ok: false, taken: taken.map((row) => row.name) };
        await trx.deleteFrom("partner_capabilities").where("partner_id", "=", partnerId).execute();
        if (rows.length > 0) await trx.insertInto("partner_capabilities").values(rows).execute();
        return { ok: true };
      });
    },

    /** Every capability offered (by partners not suspended), by name. */
    async list(): Promise<CapabilityRecord[]> {
      return (await capabilities().execute()).map(toCapability);
    },

    async ofPartner(partnerId: string): Promise<CapabilityRecord[]> {
      const rows = await capabilities()
        .where("partner_capabilities.partner_id", "=", partnerId)
        .execute();
      return rows.map(toCapability);
    },

    async find(name: string): Promise<CapabilityRecord | undefined> {
      const row = await capabilities()
        .where("partner_capabilities.name", "=", name)
        .executeTakeFirst();
      return row && toCapability(row);
    },

    async grantsOf(agentId: string): Promise<GrantRecord[]> {
      const rows = await reads
        .selectFrom("agent_grants")
        .selectAll()
        .where("agent_id", "=", agentId)
        .orderBy("created_at")
        .orderBy("capability")
        .execute();
      return rows.map(toGrant);
    },

    /**
     * An active agent asks for more (section 5.4): each grant it does not hold active becomes
     * pending with the constraints it proposes, and the device code its person approves them
     * with is stored, in one transaction.
     */
    async request(
      agentId: string,
      grants: RequestedGrant[],
      reason: string | null,
      approval: DeviceCodeRow,
    ): Promise<void> {
      const at = approval.created_at;
      await database.transaction(async (trx) => {
        for (const grant of grants) {
          const constraints = grant.constraints && JSON.stringify(grant.constraints);
          await trx
            .insertInto("agent_grants")
            .values({
              agent_id: agentId,
              capability: grant.capability,
              status: "pending",
              constraints,
              reason,
              created_at: at,
              updated_at: at,
            })
            .onConflict((conflict) =>
              conflict
                .columns(["agent_id", "capability"])
                .doUpdateSet({ status: "pending", constraints, reason, updated_at: at })
                .where("agent_grants.status", "!=", "active"),
            )
            .execute();
        }
        await trx.insertInto("device_codes").values(approval).execute();
      });
    },
  };
}

export type CapabilityStore = ReturnType<typeof createCapabilityStore>;

/** The grant rows of a new agent's registration: each asked for, pending its person. */
export function pendingGrantRows(
  agentId: string,
  grants: RequestedGrant[],
  reason: string | null,
  at: number,
): GrantRow[] {
  return grants.map((grant) => ({
    agent_id: agentId,
    capability: grant.capability,
    status: "pending",
    constraints: grant.constraints && JSON.stringify(grant.constraints),
    reason,
    created_at: at,
    updated_at: at,
  }));
}

function toCapability(row: CapabilityRow & { partner_name: string }): CapabilityRecord {
  return {
    name: row.name,
    partnerId: row.partner_id,
    partnerName: row.partner_name,
    description: row.description,
    location: row.location,
    input: row.input_schema === null ? null : JSON.parse(row.input_schema),
    output: row.output_schema === null ? null : JSON.parse(row.output_schema),
  };
}

function toGrant(row: GrantRow): GrantRecord {
  return {
    capability: row.capability,
    status: row.status,
    constraints: row.constraints === null ? null : JSON.parse(row.constraints),
    reason: row.reason,
  };
}
