import { randomUUID } from "node:crypto";
import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";
import type { Store } from "./store.ts";

export interface Partner {
  id: string;
  ownerAccountId: string;
  name: string;
  website: string | null;
  description: string | null;
  listed: boolean;
  createdAt: number;
  /** What the partner publishes on its website to prove it controls it; null until first shown. */
  siteToken: string | null;
  /** When the last check of the website found the token; null: not verified. */
  siteVerifiedAt: number | null;
  /** The origin that check fetched: the verification holds for this origin only. */
  siteVerifiedOrigin: string | null;
  /** When the operator suspended it (`agentpass-server partners suspend`); null: it is not. */
  suspendedAt: number | null;
}

/** A partner as its owner describes it. */
export type PartnerDetails = Pick<Partner, "name" | "website" | "description" | "listed">;

type PartnerOperations =
  | "createPartner"
  | "findPartner"
  | "listPartnersOwnedBy"
  | "listListedPartners"
  | "updatePartner"
  | "keepPartnerSiteToken"
  | "recordPartnerSiteCheck"
  | "deletePartner";

/** The partners of `Store`: their details, their website's verification, their deletion. */
export function createPartnerStore(
  database: StoreDatabase<IdentityDatabase>,
): Pick<Store, PartnerOperations> {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    async createPartner(
      partner: PartnerDetails & Pick<Partner, "ownerAccountId" | "createdAt">,
    ): Promise<Partner> {
      const id = randomUUID();
      await database.write((db) =>
        db
          .insertInto("partners")
          .values({
            id,
            owner_account_id: partner.ownerAccountId,
            name: partner.name,
            website: partner.website,
            description: partner.description,
            listed: partner.listed ? 1 : 0,
            created_at: partner.createdAt,
          })
          .execute(),
      );
      return {
        id,
        ...partner,
        siteToken: null,
        siteVerifiedAt: null,
        siteVerifiedOrigin: null,
        suspendedAt: null,
      };
    },

    async findPartner(id: string): Promise<Partner | undefined> {
      const row = await reads
        .selectFrom("partners")
        .selectAll()
        .where("id", "=", id)
        .executeTakeFirst();
      return row && toPartner(row);
    },

    async listPartnersOwnedBy(accountId: string): Promise<Partner[]> {
      const rows = await reads
        .selectFrom("partners")
        .selectAll()
        .where("owner_account_id", "=", accountId)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      return rows.map(toPartner);
    },

    async listListedPartners(): Promise<Partner[]> {
      const rows = await reads
        .selectFrom("partners")
        .selectAll()
        .where("listed", "=", 1)
        .where("suspended_at", "is", null)
        .orderBy("name")
        .orderBy("id")
        .execute();
      return rows.map(toPartner);
    },

    /** Changes a partner's details; `clearSiteVerification` in the same write. */
    async updatePartner(
      id: string,
      fields: PartnerDetails,
      options: { clearSiteVerification: boolean },
    ): Promise<void> {
      const cleared = { site_verified_at: null, site_verified_origin: null };
      await database.write((db) =>
        db
          .updateTable("partners")
          .set({
            name: fields.name,
            website: fields.website,
            description: fields.description,
            listed: fields.listed ? 1 : 0,
            ...(options.clearSiteVerification ? cleared : {}),
          })
          .where("id", "=", id)
          .execute(),
      );
    },

    async keepPartnerSiteToken(id: string, token: string): Promise<string | undefined> {
      await database.write((db) =>
        db
          .updateTable("partners")
          .set({ site_token: token })
          .where("id", "=", id)
          .where("site_token", "is", null)
          .execute(),
      );
      const row = await reads
        .selectFrom("partners")
        .select("site_token")
        .where("id", "=", id)
        .executeTakeFirst();
      return row?.site_token ?? undefined;
    },

    /** Records the outcome of a website check: the origin found verified and when, or null. */
    async recordPartnerSiteCheck(
      id: string,
      verified: { origin: string; at: number } | null,
    ): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("partners")
          .set({
            site_verified_at: verified?.at ?? null,
            site_verified_origin: verified?.origin ?? null,
          })
          .where("id", "=", id)
          .execute(),
      );
    },

    async deletePartner(id: string, ownerAccountId: string): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .deleteFrom("partners")
          .where("id", "=", id)
          .where("owner_account_id", "=", ownerAccountId)
          .executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}

function toPartner(row: IdentityDatabase["partners"]): Partner {
  return {
    id: row.id,
    ownerAccountId: row.owner_account_id,
    name: row.name,
    website: row.website,
    description: row.description,
    listed: row.listed === 1,
    createdAt: row.created_at,
    siteToken: row.site_token,
    siteVerifiedAt: row.site_verified_at,
    siteVerifiedOrigin: row.site_verified_origin,
    suspendedAt: row.suspended_at === null ? null : Number(row.suspended_at),
  };
}
