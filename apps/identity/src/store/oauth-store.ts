import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

interface RegisteredClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  createdAt: number;
  /** `dpop_bound_access_tokens: true` was registered (RFC 9449 section 5.2). */
  dpopBound: boolean;
}

type AuthorizationCode = IdentityDatabase["oauth_codes"];

/** What a new grant is made of: its anchor key row and what the person is shown. */
interface NewGrant {
  id: string;
  accountId: string;
  clientId: string;
  clientName: string;
  clientVerified: boolean;
  /** The partner the grant's tokens are bound to; null: any partner. */
  audience: string | null;
  /** Whether its refresh token rotates (a browser flow) or is the key itself (the CLI's). */
  rotating: boolean;
  createdAt: number;
  createdFrom: string | null;
  /** The anchor key's name, prefix and hash (of the key the CLI keeps, or of nothing usable). */
  keyName: string;
  displayPrefix: string;
  secretHash: string;
  familyHash: string | null;
  refreshHash: string | null;
  /** The DPoP key thumbprint its refresh token is bound to; null: a bearer refresh token. */
  dpopJkt: string | null;
}

/** A grant as the refresh grant judges it. */
export interface GrantRecord {
  id: string;
  accountId: string;
  clientId: string;
  audience: string | null;
  rotating: boolean;
  revokedAt: number | null;
  familyHash: string | null;
  refreshHash: string | null;
  generation: number;
  rotatedAt: number | null;
  /** The DPoP key thumbprint its refresh token is bound to; null: a bearer refresh token. */
  dpopJkt: string | null;
}

/** A grant as its person sees it on the dashboard. */
export interface ConnectedApp {
  id: string;
  clientId: string;
  clientName: string;
  clientVerified: boolean;
  /** The partner the grant is bound to, and its name; null: any partner. */
  audience: string | null;
  partnerName: string | null;
  createdAt: number;
  lastUsedAt: number | null;
  createdFrom: string | null;
  /** The thumbprint of the DPoP key its tokens are bound to (RFC 9449); null: bearer tokens. */
  dpopJkt: string | null;
}

/**
 * OAuth's own rows: registered clients, authorization codes, partners' resource URLs, and
 * grants (a client's user key and its refresh-token family).
 */
export function createOAuthStore(
  database: Pick<StoreDatabase<IdentityDatabase>, "db" | "write" | "transaction">,
) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    async insertClient(client: RegisteredClient): Promise<void> {
      await database.write((db) =>
        db
          .insertInto("oauth_clients")
          .values({
            client_id: client.clientId,
            client_name: client.clientName,
            redirect_uris: JSON.stringify(client.redirectUris),
            created_at: client.createdAt,
            last_used_at: null,
            dpop_bound: client.dpopBound ? 1 : 0,
          })
          .execute(),
      );
    },

    /** Records that a code was issued to a registered client: it is no longer purged unused. */
    async markClientUsed(clientId: string, now: number): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("oauth_clients")
          .set({ last_used_at: now })
          .where("client_id", "=", clientId)
          .execute(),
      );
    },

    async findClient(clientId: string): Promise<RegisteredClient | undefined> {
      const row = await reads
        .selectFrom("oauth_clients")
        .selectAll()
        .where("client_id", "=", clientId)
        .executeTakeFirst();
      return (
        row && {
          clientId: row.client_id,
          clientName: row.client_name,
          redirectUris: JSON.parse(row.redirect_uris) as string[],
          createdAt: row.created_at,
          dpopBound: row.dpop_bound === 1,
        }
      );
    },

    async insertCode(code: AuthorizationCode): Promise<void> {
      await database.write((db) => db.insertInto("oauth_codes").values(code).execute());
    },

    /**
     * Spends a code: the row as it was when this call marked it used, or undefined when it was
     * already used (then `replayed` tells) or does not exist. One statement, so two redemptions
     * racing each other cannot both win.
     */
    async takeCode(
      codeHash: string,
      now: number,
    ): Promise<{ code?: AuthorizationCode; replayed: boolean }> {
      const taken = await database.write((db) =>
        db
          .updateTable("oauth_codes")
          .set({ used_at: now })
          .where("code_hash", "=", codeHash)
          .where("used_at", "is", null)
          .returningAll()
          .executeTakeFirst(),
      );
      if (taken) return { code: taken, replayed: false };
      const existing = await reads
        .selectFrom("oauth_codes")
        .select("code_hash")
        .where("code_hash", "=", codeHash)
        .executeTakeFirst();
      return { replayed: existing !== undefined };
    },

    /** Records which key a code gave, so a replay of the code can revoke it. */
    async linkCodeToKey(codeHash: string, keyId: string): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("oauth_codes")
          .set({ key_id: keyId })
          .where("code_hash", "=", codeHash)
          .execute(),
      );
    },

    async keyOfCode(codeHash: string): Promise<string | undefined> {
      const row = await reads
        .selectFrom("oauth_codes")
        .select("key_id")
        .where("code_hash", "=", codeHash)
        .executeTakeFirst();
      return row?.key_id ?? undefined;
    },

    async addResource(partnerId: string, url: string, now: number): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .insertInto("partner_resources")
          .values({ url, partner_id: partnerId, created_at: now })
          .onConflict((oc) => oc.column("url").doNothing())
          .returning("url")
          .executeTakeFirst(),
      );
      return result !== undefined;
    },

    async removeResource(partnerId: string, url: string): Promise<void> {
      await database.write((db) =>
        db
          .deleteFrom("partner_resources")
          .where("partner_id", "=", partnerId)
          .where("url", "=", url)
          .execute(),
      );
    },

    async resourcesOf(partnerId: string): Promise<string[]> {
      const rows = await reads
        .selectFrom("partner_resources")
        .select("url")
        .where("partner_id", "=", partnerId)
        .orderBy("url")
        .execute();
      return rows.map((row) => row.url);
    },

    async partnerOfResource(url: string): Promise<string | undefined> {
      const row = await reads
        .selectFrom("partner_resources")
        .select("partner_id")
        .where("url", "=", url)
        .executeTakeFirst();
      return row?.partner_id;
    },

    /**
     * Makes a grant: its user key row (the anchor session tokens name, with the grant's id) and
     * its grant row, in one transaction.
     */
    async insertGrant(grant: NewGrant): Promise<void> {
      const { id } = grant;
      await database.transaction(async (trx) => {
        await trx
          .insertInto("user_keys")
          .values({
            id,
            account_id: grant.accountId,
            name: grant.keyName,
            display_prefix: grant.displayPrefix,
            secret_hash: grant.secretHash,
            created_at: grant.createdAt,
            last_used_at: null,
            revoked_at: null,
            client_id: grant.clientId,
            audience: grant.audience,
            rotating: grant.rotating ? 1 : 0,
            dpop_jkt: grant.dpopJkt,
          })
          .execute();
        await trx
          .insertInto("grants")
          .values({
            key_id: id,
            client_name: grant.clientName,
            client_verified: grant.clientVerified ? 1 : 0,
            created_from: grant.createdFrom,
            family_hash: grant.familyHash,
            refresh_hash: grant.refreshHash,
            generation: 0,
            rotated_at: null,
          })
          .execute();
      });
    },

    /** A grant with its key's state, revoked or not; undefined when there is none. */
    async findGrant(id: string): Promise<GrantRecord | undefined> {
      const row = await reads
        .selectFrom("grants as g")
        .innerJoin("user_keys as k", "k.id", "g.key_id")
        .select([
          "k.id as id",
          "k.account_id as accountId",
          "k.client_id as clientId",
          "k.audience as audience",
          "k.rotating as rotating",
          "k.revoked_at as revokedAt",
          "g.family_hash as familyHash",
          "g.refresh_hash as refreshHash",
          "g.generation as generation",
          "g.rotated_at as rotatedAt",
          "k.dpop_jkt as dpopJkt",
        ])
        .where("g.key_id", "=", id)
        .executeTakeFirst();
      return (
        row && {
          ...row,
          clientId: row.clientId ?? "",
          rotating: row.rotating === 1,
          generation: Number(row.generation),
          rotatedAt: row.rotatedAt === null ? null : Number(row.rotatedAt),
          revokedAt: row.revokedAt === null ? null : Number(row.revokedAt),
        }
      );
    },

    /**
     * Moves a grant's refresh token from generation `from` to the next, in one statement: false
     * (nothing written) when another refresh moved it first. The row is rewritten in place, so
     * a grant is one row however often it refreshes.
     */
    async advanceGrant(
      id: string,
      from: number,
      next: { refreshHash: string; familyHash: string; at: number },
    ): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .updateTable("grants")
          .set({
            generation: from + 1,
            refresh_hash: next.refreshHash,
            family_hash: next.familyHash,
            rotated_at: next.at,
          })
          .where("key_id", "=", id)
          .where("generation", "=", from)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },

    /** Revokes every grant of an account in one statement; how many were working. */
    async revokeGrantsOf(accountId: string, now: number): Promise<number> {
      const result = await database.write((db) =>
        db
          .updateTable("user_keys")
          .set({ revoked_at: now })
          .where("account_id", "=", accountId)
          .where("client_id", "is not", null)
          .where("revoked_at", "is", null)
          .executeTakeFirst(),
      );
      return Number(result.numUpdatedRows);
    },

    /** The grants of an account that are not revoked, newest first: one row each. */
    async listGrants(accountId: string): Promise<ConnectedApp[]> {
      const rows = await reads
        .selectFrom("grants as g")
        .innerJoin("user_keys as k", "k.id", "g.key_id")
        .leftJoin("partners as p", "p.id", "k.audience")
        .select([
          "k.id as id",
          "k.client_id as clientId",
          "g.client_name as clientName",
          "g.client_verified as clientVerified",
          "p.name as partnerName",
          "k.audience as audience",
          "k.created_at as createdAt",
          "k.last_used_at as lastUsedAt",
          "g.created_from as createdFrom",
          "k.dpop_jkt as dpopJkt",
        ])
        .where("k.account_id", "=", accountId)
        .where("k.revoked_at", "is", null)
        .orderBy("k.created_at", "desc")
        .orderBy("k.id")
        .execute();
      return rows.map((row) => ({
        ...row,
        clientId: row.clientId ?? "",
        clientVerified: row.clientVerified === 1,
        createdAt: Number(row.createdAt),
        lastUsedAt: row.lastUsedAt === null ? null : Number(row.lastUsedAt),
      }));
    },
  };
}

export type OAuthStore = ReturnType<typeof createOAuthStore>;
