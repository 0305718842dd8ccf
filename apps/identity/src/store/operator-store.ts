import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import { sql } from "kysely";
import type { ExportSection } from "./personal-data.ts";
import type { IdentityDatabase } from "./schema.ts";

/** An account as the operator lists it. */
export interface AccountRow {
  id: string;
  email: string;
  createdAt: number;
  /** Unrevoked keys made by hand, and grants (connected apps, CLI logins) not revoked. */
  activeKeys: number;
  activeGrants: number;
  partners: number;
}

/** A partner as the operator lists it. */
export interface PartnerRow {
  id: string;
  name: string;
  ownerEmail: string;
  website: string | null;
  listed: boolean;
  siteVerifiedAt: number | null;
  suspendedAt: number | null;
  activeKeys: number;
  createdAt: number;
}

/**
 * Every row the identity service holds that names an account, by section of the export, as
 * stored less its secrets: a hash of a key, a code, a link, a browser or a session is never read
 * here. Its sections are those personal-data.ts gives its tables, so a table listed there
 * without its rows here does not compile.
 */
export type AccountRecord = { account: { id: string; email: string; created_at: number } } & {
  [Section in Exclude<ExportSection, "account">]: Record<string, unknown>[];
};

const keyColumns = [
  "id",
  "name",
  "display_prefix",
  "created_at",
  "last_used_at",
  "revoked_at",
] as const;

/**
 * What `agentpass-server accounts` and `partners` read and change: listings, a person's whole
 * record, and a partner's suspension. Not on any request's path.
 */
export function createOperatorStore(database: StoreDatabase<IdentityDatabase>) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  const count = (value: number | string | bigint | null) => Number(value ?? 0);

  return {
    /** Accounts, newest first, at most `limit`. */
    async listAccounts(limit: number): Promise<AccountRow[]> {
      const rows = await sql<{
        id: string;
        email: string;
        created_at: number | string;
        keys: number | string;
        grants: number | string;
        partners: number | string;
      }>`SELECT a.id, a.email, a.created_at,
          (SELECT count(*) FROM user_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL
            AND k.client_id IS NULL) AS keys,
          (SELECT count(*) FROM user_keys k WHERE k.account_id = a.id AND k.revoked_at IS NULL
            AND k.client_id IS NOT NULL) AS grants,
          (SELECT count(*) FROM partners p WHERE p.owner_account_id = a.id) AS partners
        FROM accounts a ORDER BY a.created_at DESC, a.id LIMIT ${limit}`.execute(reads);
      return rows.rows.map((row) => ({
        id: row.id,
        email: row.email,
        createdAt: count(row.created_at),
        activeKeys: count(row.keys),
        activeGrants: count(row.grants),
        partners: count(row.partners),
      }));
    },

    /** Every row naming the account (see `AccountRecord`); undefined when there is none. */
    async accountRecord(accountId: string): Promise<AccountRecord | undefined> {
      const account = await reads
        .selectFrom("accounts")
        .selectAll()
        .where("id", "=", accountId)
        .executeTakeFirst();
      if (!account) return undefined;
      const partnerIds = reads
        .selectFrom("partners")
        .select("id")
        .where("owner_account_id", "=", accountId);
      const userKeys = await reads
        .selectFrom("user_keys")
        .select([...keyColumns, "client_id", "audience"])
        .where("account_id", "=", accountId)
        .orderBy("created_at")
        .execute();
      return {
        account,
        user_keys: userKeys.filter((key) => key.client_id === null),
        grants: await reads
          .selectFrom("grants")
          .innerJoin("user_keys", "user_keys.id", "grants.key_id")
          .select([
            "grants.key_id",
            "grants.client_name",
            "grants.client_verified",
            "grants.created_from",
            "grants.generation",
            "grants.rotated_at",
            "user_keys.client_id",
            "user_keys.audience",
            "user_keys.created_at",
            "user_keys.last_used_at",
            "user_keys.revoked_at",
          ])
          .where("user_keys.account_id", "=", accountId)
          .orderBy("user_keys.created_at")
          .execute(),
        web_sessions: await reads
          .selectFrom("web_sessions")
          .select(["created_at", "last_seen_at", "expires_at"])
          .where("account_id", "=", accountId)
          .orderBy("created_at")
          .execute(),
        partners: await reads
          .selectFrom("partners")
          .select(["id", "name", "website", "description", "listed", "created_at"])
          .select(["site_verified_at", "site_verified_origin", "suspended_at"])
          .where("owner_account_id", "=", accountId)
          .orderBy("created_at")
          .execute(),
        partner_keys: await reads
          .selectFrom("partner_keys")
          .select([...keyColumns, "partner_id", "suspended_at"])
          .where("partner_id", "in", partnerIds)
          .orderBy("created_at")
          .execute(),
        partner_resources: await reads
          .selectFrom("partner_resources")
          .selectAll()
          .where("partner_id", "in", partnerIds)
          .orderBy("created_at")
          .execute(),
        partner_capabilities: await reads
          .selectFrom("partner_capabilities")
          .selectAll()
          .where("partner_id", "in", partnerIds)
          .orderBy("name")
          .execute(),
        usage_daily: await reads
          .selectFrom("usage_daily")
          .selectAll()
          .where("partner_id", "in", partnerIds)
          .orderBy("day")
          .orderBy("partner_id")
          .orderBy("outcome")
          .execute(),
        partner_activity: await reads
          .selectFrom("partner_activity")
          .innerJoin("partners", "partners.id", "partner_activity.partner_id")
          .select([
            "partner_activity.partner_id",
            "partners.name",
            "partners.website",
            "partner_activity.first_at",
            "partner_activity.last_at",
            "partner_activity.count",
          ])
          .where("partner_activity.account_id", "=", accountId)
          .orderBy("partner_activity.first_at")
          .execute(),
        departed_partner_activity: await reads
          .selectFrom("departed_partner_activity")
          .select(["partner_id", "name", "website", "first_at", "last_at", "count", "deleted_at"])
          .where("account_id", "=", accountId)
          .orderBy("first_at")
          .execute(),
        // Each agent with its host and the partners that saw it: public keys and names only.
        agents: await reads
          .selectFrom("agents")
          .innerJoin("agent_hosts", "agent_hosts.id", "agents.host_id")
          .leftJoin("agent_activity", "agent_activity.agent_id", "agents.id")
          .select([
            "agents.id",
            "agents.name",
            "agents.status",
            "agents.public_jwk",
            "agents.created_at",
            "agents.activated_at",
            "agents.last_used_at",
            "agents.revoked_at",
            "agent_hosts.id as host_id",
            "agent_hosts.name as host_name",
            "agent_hosts.public_jwk as host_public_jwk",
            "agent_hosts.status as host_status",
            "agent_activity.partner_id",
            "agent_activity.first_at as partner_first_at",
            "agent_activity.last_at as partner_last_at",
            "agent_activity.count as partner_count",
          ])
          .where((eb) =>
            eb.or([
              eb("agents.account_id", "=", accountId),
              eb("agent_hosts.account_id", "=", accountId),
            ]),
          )
          .orderBy("agents.created_at")
          .orderBy("agents.id")
          .execute(),
        agent_grants: await reads
          .selectFrom("agent_grants")
          .innerJoin("agents", "agents.id", "agent_grants.agent_id")
          .innerJoin("agent_hosts", "agent_hosts.id", "agents.host_id")
          .selectAll("agent_grants")
          .where((eb) =>
            eb.or([
              eb("agents.account_id", "=", accountId),
              eb("agent_hosts.account_id", "=", accountId),
            ]),
          )
          .orderBy("agent_grants.agent_id")
          .orderBy("agent_grants.capability")
          .execute(),
        device_codes: await reads
          .selectFrom("device_codes")
          .select(["client_name", "client_address", "status", "created_at", "expires_at"])
          .where("account_id", "=", accountId)
          .orderBy("created_at")
          .execute(),
        oauth_codes: await reads
          .selectFrom("oauth_codes")
          .select(["client_id", "client_name", "redirect_uri", "partner_id", "scope", "key_id"])
          .select(["expires_at", "used_at"])
          .where("account_id", "=", accountId)
          .orderBy("expires_at")
          .execute(),
        sign_in_codes: await reads
          .selectFrom("sign_in_codes")
          .select(["attempts", "created_at", "expires_at", "used_at"])
          .where("email", "=", account.email)
          .orderBy("created_at")
          .execute(),
        remembered_browsers: await reads
          .selectFrom("remembered_browsers")
          .select(["expires_at"])
          .where("email", "=", account.email)
          .orderBy("expires_at")
          .execute(),
        audit_events: (
          await reads
            .selectFrom("audit_events")
            .selectAll()
            .where("account_id", "=", accountId)
            .orderBy("id")
            .execute()
        ).map((event) => ({ ...event, detail: event.detail && JSON.parse(event.detail) })),
      };
    },

    /** Every partner, newest first, at most `limit`. */
    async listPartners(limit: number): Promise<PartnerRow[]> {
      const rows = await reads
        .selectFrom("partners")
        .innerJoin("accounts", "accounts.id", "partners.owner_account_id")
        .select([
          "partners.id",
          "partners.name",
          "accounts.email",
          "partners.website",
          "partners.listed",
          "partners.site_verified_at",
          "partners.suspended_at",
          "partners.created_at",
        ])
        .select((eb) =>
          eb
            .selectFrom("partner_keys")
            .select((inner) => inner.fn.countAll<number | string>().as("n"))
            .whereRef("partner_keys.partner_id", "=", "partners.id")
            .where("partner_keys.revoked_at", "is", null)
            .as("keys"),
        )
        .orderBy("partners.created_at", "desc")
        .orderBy("partners.id")
        .limit(limit)
        .execute();
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        ownerEmail: row.email,
        website: row.website,
        listed: row.listed === 1,
        siteVerifiedAt: row.site_verified_at === null ? null : count(row.site_verified_at),
        suspendedAt: row.suspended_at === null ? null : count(row.suspended_at),
        activeKeys: count(row.keys),
        createdAt: count(row.created_at),
      }));
    },

    /**
     * Suspends a partner (`at`) or reinstates it (null), with each of its keys in the same
     * transaction: the key change log carries it to every instance's caches, so it holds from
     * the next request on. False when no partner has that id or it already is as asked.
     */
    async setPartnerSuspended(partnerId: string, at: number | null): Promise<boolean> {
      return database.transaction(async (trx) => {
        const changed = await trx
          .updateTable("partners")
          .set({ suspended_at: at })
          .where("id", "=", partnerId)
          .where("suspended_at", at === null ? "is not" : "is", null)
          .executeTakeFirst();
        if (changed.numUpdatedRows === 0n) return false;
        await trx
          .updateTable("partner_keys")
          .set({ suspended_at: at })
          .where("partner_id", "=", partnerId)
          .execute();
        return true;
      });
    },
  };
}

export type OperatorStore = ReturnType<typeof createOperatorStore>;
