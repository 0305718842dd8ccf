import { randomUUID } from "node:crypto";
import {
  createPreparedQuery,
  type createReadCaches,
  type HotRead,
  type ReadOnlyDb,
  type StoreDatabase,
} from "@agentpass/db";
import { sql } from "kysely";
import { evictPartnerKeyByHash, evictTokenOwner, evictUserKeyByHash } from "./key-changes.ts";
import type { IdentityDatabase } from "./schema.ts";
import type { Store } from "./store.ts";

export interface KeyRecord {
  id: string;
  /** The account (user keys) or partner (partner keys) the key belongs to. */
  ownerId: string;
  name: string;
  displayPrefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface NewKey {
  ownerId: string;
  name: string;
  displayPrefix: string;
  secretHash: string;
  createdAt: number;
}

/** What the verify path needs about a session token's user key, in one read. */
export interface TokenOwner {
  accountId: string;
  email: string;
  revokedAt: number | null;
  /** The OAuth client the key was issued to; null for keys made in the dashboard. */
  clientId: string | null;
}

export type KeyTableName = "user_keys" | "partner_keys";

/** What the verify and mint paths read of a key found by its hash. */
export type KeyByHash = {
  id: string;
  ownerId: string;
  revokedAt: number | null;
  /** User keys only: the grant's client (null: made by hand), the bound partner, 1 when it rotates. */
  clientId?: string | null;
  audience?: string | null;
  rotating?: number;
  /** User keys only: the DPoP key a grant's key is bound to (RFC 9449); null: bearer. */
  dpopJkt?: string | null;
  /** Partner keys only: when the operator suspended the key's partner; null: not suspended. */
  suspendedAt?: number | null;
};

type KeyOperations =
  | "insertKey"
  | "findKeyByHash"
  | "findKeyById"
  | "listKeys"
  | "revokeKey"
  | "renameKey"
  | "recordKeyUse"
  | "findTokenOwner";

/**
 * The user and partner keys of `Store`. The reads of the verify and mint paths (a key by its
 * hash, a token's owner) are prepared statements run without the query builder, kept in
 * `caches` until their key changes (store/key-changes.ts).
 */
export function createKeyStore(
  database: StoreDatabase<IdentityDatabase>,
  caches: Pick<ReturnType<typeof createReadCaches>, "cached">,
): Pick<Store, KeyOperations> {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  const ownerColumn = (table: KeyTableName) =>
    table === "user_keys" ? ("account_id" as const) : ("partner_id" as const);
  const keyByHash = {
    user_keys: caches.cached(
      createPreparedQuery<KeyByHash>(
        database,
        'SELECT id, account_id AS "ownerId", revoked_at AS "revokedAt", client_id AS "clientId", audience, rotating, dpop_jkt AS "dpopJkt" FROM user_keys WHERE secret_hash = ?',
      ),
      evictUserKeyByHash,
    ),
    partner_keys: caches.cached(
      createPreparedQuery<KeyByHash>(
        database,
        'SELECT id, partner_id AS "ownerId", revoked_at AS "revokedAt", suspended_at AS "suspendedAt" FROM partner_keys WHERE secret_hash = ?',
      ),
      evictPartnerKeyByHash,
    ),
  };
  const tokenOwner = caches.cached(
    createPreparedQuery<TokenOwner>(
      database,
      'SELECT a.id AS "accountId", a.email, k.revoked_at AS "revokedAt", k.client_id AS "clientId" FROM user_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ?',
    ),
    evictTokenOwner,
  );

  return {
    async insertKey(table: KeyTableName, key: NewKey): Promise<KeyRecord> {
      const id = randomUUID();
      const base = {
        id,
        name: key.name,
        display_prefix: key.displayPrefix,
        secret_hash: key.secretHash,
        created_at: key.createdAt,
        last_used_at: null,
        revoked_at: null,
      };
      await database.write((db) =>
        table === "user_keys"
          ? db
              .insertInto("user_keys")
              .values({
                ...base,
                account_id: key.ownerId,
                client_id: null,
                audience: null,
                rotating: 0,
                dpop_jkt: null,
              })
              .execute()
          : // A key made while its partner is suspended is suspended with it.
            db
              .insertInto("partner_keys")
              .values((eb) => ({
                ...base,
                partner_id: key.ownerId,
                suspended_at: eb
                  .selectFrom("partners")
                  .select("suspended_at")
                  .where("id", "=", key.ownerId),
              }))
              .execute(),
      );
      const { secretHash: _, ...rest } = key;
      return { id, ...rest, lastUsedAt: null, revokedAt: null };
    },

    findKeyByHash(
      checked: HotRead,
      table: KeyTableName,
      secretHash: string,
    ): Promise<KeyByHash | undefined> {
      return keyByHash[table](checked, secretHash);
    },

    async findKeyById(table: KeyTableName, id: string): Promise<KeyRecord | undefined> {
      const row = await reads
        .selectFrom(table)
        .select(keyColumns(ownerColumn(table)))
        .where("id", "=", id)
        .executeTakeFirst();
      return row as KeyRecord | undefined;
    },

    async listKeys(table: KeyTableName, ownerId: string): Promise<KeyRecord[]> {
      const rows = await reads
        .selectFrom(table)
        .select(keyColumns(ownerColumn(table)))
        .where(ownerColumn(table), "=", ownerId)
        .$if(table === "user_keys", (query) => query.where(sql.ref("client_id"), "is", null))
        .orderBy("created_at", "desc")
        .orderBy("id")
        .execute();
      return rows as KeyRecord[];
    },

    /** Revokes a key; false when no unrevoked key has that id. */
    async revokeKey(table: KeyTableName, id: string, revokedAt: number): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .updateTable(table)
          .set({ revoked_at: revokedAt })
          .where("id", "=", id)
          .where("revoked_at", "is", null)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },

    /** Renames a key of `ownerId`; false when it has no key with that id. */
    async renameKey(
      table: KeyTableName,
      key: { id: string; ownerId: string; name: string },
    ): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .updateTable(table)
          .set({ name: key.name })
          .where("id", "=", key.id)
          .where(ownerColumn(table), "=", key.ownerId)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows > 0n;
    },

    /** Records last use times gathered in memory, in one transaction. Never moves time back. */
    async recordKeyUse(table: KeyTableName, uses: ReadonlyMap<string, number>): Promise<void> {
      if (uses.size === 0) return;
      await database.transaction(async (trx) => {
        for (const [id, at] of uses) {
          await trx
            .updateTable(table)
            .set({ last_used_at: at })
            .where("id", "=", id)
            .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", at)]))
            .execute();
        }
      });
    },

    findTokenOwner(checked: HotRead, userKeyId: string): Promise<TokenOwner | undefined> {
      return tokenOwner(checked, userKeyId);
    },
  };
}

function keyColumns(owner: "account_id" | "partner_id") {
  return [
    "id",
    `${owner} as ownerId`,
    "name",
    "display_prefix as displayPrefix",
    "created_at as createdAt",
    "last_used_at as lastUsedAt",
    "revoked_at as revokedAt",
  ] as const;
}
