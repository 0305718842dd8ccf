import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import { sql } from "kysely";
import type { IdentityDatabase } from "./schema.ts";

export interface UsageBatch {
  /** `partnerId|day|outcome` → count */
  daily: Map<string, number>;
  /** `accountId|partnerId` → first, last and count of successful verifications */
  activity: Map<string, { first: number; last: number; count: number }>;
  /** `agentId|partnerId` → the same, for an agent's verifications */
  agents: Map<string, { first: number; last: number; count: number }>;
}

/** Usage counters: per partner and day by outcome, and which partners learned whose email. */
export function createUsageStore(
  database: Pick<StoreDatabase<IdentityDatabase>, "db" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    /**
     * Adds a batch gathered in memory, in one transaction; partners deleted meanwhile are skipped.
     * Rows are taken in key order, so two instances flushing at once wait for each other's row
     * locks in the same order and never deadlock.
     */
    async addUsage(batch: UsageBatch): Promise<void> {
      await database.transaction(async (trx) => {
        for (const [key, count] of [...batch.daily].sort(byKey)) {
          const [partnerId = "", day = "", outcome = ""] = key.split("|");
          const partner = await trx
            .selectFrom("partners")
            .select("id")
            .where("id", "=", partnerId)
            .executeTakeFirst();
          if (!partner) continue;
          await trx
            .insertInto("usage_daily")
            .values({ partner_id: partnerId, day, outcome, count })
            .onConflict((oc) =>
              oc.columns(["partner_id", "day", "outcome"]).doUpdateSet((eb) => ({
                count: eb("usage_daily.count", "+", eb.ref("excluded.count")),
              })),
            )
            .execute();
        }
        for (const [key, seen] of [...batch.activity].sort(byKey)) {
          const [accountId = "", partnerId = ""] = key.split("|");
          const exists = await trx
            .selectFrom("accounts")
            .innerJoin("partners", (join) => join.on("partners.id", "=", partnerId))
            .select("accounts.id")
            .where("accounts.id", "=", accountId)
            .executeTakeFirst();
          if (!exists) continue;
          await trx
            .insertInto("partner_activity")
            .values({
              account_id: accountId,
              partner_id: partnerId,
              first_at: seen.first,
              last_at: seen.last,
              count: seen.count,
            })
            .onConflict((oc) =>
              oc.columns(["account_id", "partner_id"]).doUpdateSet((eb) => ({
                last_at: eb.ref("excluded.last_at"),
                count: eb("partner_activity.count", "+", eb.ref("excluded.count")),
              })),
            )
            .execute();
        }
        for (const [key, seen] of [...batch.agents].sort(byKey)) {
          const [agentId = "", partnerId = ""] = key.split("|");
          const exists = await trx
            .selectFrom("agents")
            .innerJoin("partners", (join) => join.on("partners.id", "=", partnerId))
            .select("agents.id")
            .where("agents.id", "=", agentId)
            .executeTakeFirst();
          if (!exists) continue;
          await trx
            .insertInto("agent_activity")
            .values({
              agent_id: agentId,
              partner_id: partnerId,
              first_at: seen.first,
              last_at: seen.last,
              count: seen.count,
            })
            .onConflict((oc) =>
              oc.columns(["agent_id", "partner_id"]).doUpdateSet((eb) => ({
                last_at: eb.ref("excluded.last_at"),
                count: eb("agent_activity.count", "+", eb.ref("excluded.count")),
              })),
            )
            .execute();
        }
      });
    },

    async usageOf(partnerId: string, sinceDay: string) {
      return reads
        .selectFrom("usage_daily")
        .select(["day", "outcome", "count"])
        .where("partner_id", "=", partnerId)
        .where("day", ">=", sinceDay)
        .orderBy("day")
        .execute();
    },

    /** The partners that learned the account's email, deleted ones included, latest first. */
    async activityOf(accountId: string) {
      return reads
        .selectFrom("partner_activity")
        .innerJoin("partners", "partners.id", "partner_activity.partner_id")
        .select([
          "partners.id as partnerId",
          "partners.name",
          "partners.website",
          "partner_activity.first_at as firstAt",
          "partner_activity.last_at as lastAt",
          "partner_activity.count",
          sql<number | null>`NULL`.as("deletedAt"),
        ])
        .where("partner_activity.account_id", "=", accountId)
        .unionAll(
          reads
            .selectFrom("departed_partner_activity")
            .select([
              "partner_id as partnerId",
              "name",
              "website",
              "first_at as firstAt",
              "last_at as lastAt",
              "count",
              "deleted_at as deletedAt",
            ])
            .where("account_id", "=", accountId),
        )
        .orderBy("lastAt", "desc")
        .execute();
    },
  };
}

export type UsageStore = ReturnType<typeof createUsageStore>;

function byKey([a]: [string, unknown], [b]: [string, unknown]): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
