import { randomUUID } from "node:crypto";
import {
  type ChangeCheck,
  createPreparedQuery,
  createPreparedRows,
  createReadCaches,
  type OpenedDatabase,
  type ReadOnlyDb,
} from "@agentpass/db";
import { type Kysely, sql } from "kysely";

import {
  createKeyChangeCheck,
  evictPartnerKeyByHash,
  evictTokenOwner,
  evictUserKeyByHash,
  touchesSealingKeys,
} from "./key-changes.ts";
import type { IdentityDatabase } from "./schema.ts";

export interface Account {
  id: string;
  email: string;
  createdAt: number;
}

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
}

/** A partner as its owner describes it. */
export type PartnerDetails = Pick<Partner, "name" | "website" | "description" | "listed">;

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

/** A row of `sealing_keys`: wrapped, or in clear as releases before migration 0005 kept it. */
export interface StoredSealingKey {
  id: string;
  /** base64, or null once wrapped. */
  secret: string | null;
  wrapped: string | null;
  createdAt: number;
}

/** PostgreSQL advisory lock taken by every write of `sealing_keys` (an arbitrary constant). */
const SEALING_KEYS_LOCK = 7_413_926_051;

/**
 * The identity service's accounts, keys, partners and sealing keys: plain data in, plain data
 * out. It runs unchanged on SQLite and PostgreSQL. The reads of the verify and mint paths are
 * prepared statements run without the query builder (`createPreparedQuery`); every write goes
 * through `database.write`, so this process's key caches see it on the next request.
 */
export function createStore(database: OpenedDatabase<IdentityDatabase>) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  const ownerColumn = (table: KeyTableName) =>
    table === "user_keys" ? ("account_id" as const) : ("partner_id" as const);
  type KeyByHash = {
    id: string;
    ownerId: string;
    revokedAt: number | null;
    /** User keys only: the grant's client (null: made by hand), the bound partner, 1 when it rotates. */
    clientId?: string | null;
    audience?: string | null;
    rotating?: number;
  };
  let keysChanged: (() => Promise<void>) | undefined;
  // A key change drops that key's cached reads only (store/key-changes.ts).
  const caches = createReadCaches(keyChangeCheck(database), async (changes) => {
    if (touchesSealingKeys(changes)) await keysChanged?.();
  });
  const keyByHash = {
    user_keys: caches.cached(
      createPreparedQuery<KeyByHash>(
        database,
        'SELECT id, account_id AS "ownerId", revoked_at AS "revokedAt", client_id AS "clientId", audience, rotating FROM user_keys WHERE secret_hash = ?',
      ),
      evictUserKeyByHash,
    ),
    partner_keys: caches.cached(
      createPreparedQuery<KeyByHash>(
        database,
        'SELECT id, partner_id AS "ownerId", revoked_at AS "revokedAt" FROM partner_keys WHERE secret_hash = ?',
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
  const sealingKeys = createPreparedRows<StoredSealingKey>(
    database,
    'SELECT id, secret, wrapped, created_at AS "createdAt" FROM sealing_keys ORDER BY created_at DESC, id DESC',
  );

  /**
   * Runs a write of `sealing_keys`. SQLite runs each statement as a transaction of its own, and
   * one statement is atomic, so `write` is one statement there (a transaction held across awaits
   * would let another connection of this process wait on the lock and block the thread). On
   * PostgreSQL, whose reads under READ COMMITTED do not see a write in flight, writers take one
   * advisory lock: two instances starting together on an empty database make one key.
   */
  async function writeSealingKeys<T>(write: (db: Kysely<IdentityDatabase>) => Promise<T>) {
    if (database.engine === "sqlite") return database.write(write);
    return database.transaction(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${SEALING_KEYS_LOCK})`.execute(trx);
      return write(trx);
    });
  }

  return {
    /** The query builder, for health checks and tests. */
    db: database.db,
    /**
     * The database as the stores kept beside this one write to it (the rate-limit counters,
     * `createDatabaseRateLimitStore`): its one write path, and where a prepared write runs.
     */
    counters: database as Pick<
      OpenedDatabase<IdentityDatabase>,
      "write" | "sqlite" | "pool" | "pipeline" | "poolMode"
    >,

    async createAccount(email: string, createdAt: number): Promise<Account | null> {
      const account = { id: randomUUID(), email, created_at: createdAt };
      const inserted = await database.write((db) =>
        db
          .insertInto("accounts")
          .values(account)
          .onConflict((oc) => oc.column("email").doNothing())
          .returning("id")
          .executeTakeFirst(),
      );
      return inserted ? { id: account.id, email, createdAt } : null;
    },

    async findAccountByEmail(email: string): Promise<Account | undefined> {
      const row = await reads
        .selectFrom("accounts")
        .selectAll()
        .where("email", "=", email)
        .executeTakeFirst();
      return row && { id: row.id, email: row.email, createdAt: row.created_at };
    },

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
              })
              .execute()
          : db
              .insertInto("partner_keys")
              .values({ ...base, partner_id: key.ownerId })
              .execute(),
      );
      const { secretHash: _, ...rest } = key;
      return { id, ...rest, lastUsedAt: null, revokedAt: null };
    },

    /**
     * Starts the reads of one verify or mint; await it first. Key reads are cached until their
     * key changes, which is checked here by a check that starts after the call (the change log
     * `key_changes`; on SQLite read only when `PRAGMA data_version` or this process's writes say
     * something changed), so a revocation by any process or instance holds from the next request
     * on.
     */
    beginHotRead(): Promise<void> {
      return caches.beginRequest();
    },

    /** The key whose hash is `secretHash`, revoked or not. */
    findKeyByHash(table: KeyTableName, secretHash: string): Promise<KeyByHash | undefined> {
      return keyByHash[table](secretHash);
    },

    async findKeyById(table: KeyTableName, id: string): Promise<KeyRecord | undefined> {
      const row = await reads
        .selectFrom(table)
        .select(keyColumns(ownerColumn(table)))
        .where("id", "=", id)
        .executeTakeFirst();
      return row as KeyRecord | undefined;
    },

    /**
     * The keys of an account or partner, newest first. An account's are those made by hand: the
     * keys of its grants (a client's) are listed as grants (`OAuthStore.listGrants`).
     */
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

    findTokenOwner(userKeyId: string): Promise<TokenOwner | undefined> {
      return tokenOwner(userKeyId);
    },

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
      return { id, ...partner, siteToken: null, siteVerifiedAt: null, siteVerifiedOrigin: null };
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

    /** The public directory: listed partners by name. */
    async listListedPartners(): Promise<Partner[]> {
      const rows = await reads
        .selectFrom("partners")
        .selectAll()
        .where("listed", "=", 1)
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

    /**
     * Gives a partner its site token unless it has one; returns the token it has after the call
     * (two pages shown at once both show the one that was kept).
     */
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

    /**
     * Deletes a partner of `ownerAccountId` with its keys, usage counts and activity rows (the
     * foreign keys cascade); false when the account owns no partner with that id.
     */
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

    /** Deletes an account with its keys, partners and their keys: none verifies again. */
    async deleteAccount(accountId: string): Promise<void> {
      await database.write((db) => db.deleteFrom("accounts").where("id", "=", accountId).execute());
    },

    /**
     * Runs `reload` inside the change check of `beginHotRead` whenever the database may have
     * changed, before the requests that awaited the check go on: the sealing keys are re-read.
     */
    onKeysChanged(reload: () => Promise<void>): void {
      keysChanged = reload;
    },

    /** Every sealing key, newest first (the one that seals). A few rows. */
    async listSealingKeys(): Promise<StoredSealingKey[]> {
      return (await sealingKeys()).map((row) => ({ ...row }));
    },

    /**
     * Adds a sealing key, newer than every other whatever the clocks say, only if the keys are
     * as the caller last read them: with `newest` null, only into an empty table (processes
     * starting together make one key); else only while the newest key is still wrapped as read
     * (a rewrap in between would leave the new key under the old secret). False: nothing added.
     */
    async addSealingKey(
      key: { id: string; wrapped: string; createdAt: number },
      newest: { id: string; wrapped: string } | null,
    ): Promise<boolean> {
      const asRead = newest
        ? sql`sum(CASE WHEN id = ${newest.id} AND wrapped = ${newest.wrapped} THEN 1 ELSE 0 END) = 1`
        : sql`count(*) = 0`;
      const added = await writeSealingKeys((trx) =>
        sql`INSERT INTO sealing_keys (id, wrapped, created_at)
          SELECT ${key.id}, ${key.wrapped},
            CASE WHEN max(created_at) >= ${key.createdAt} THEN max(created_at) + 1
              ELSE ${key.createdAt} END
          FROM sealing_keys HAVING ${asRead}`.execute(trx),
      );
      return Number(added.numAffectedRows ?? 0) === 1;
    },

    /** Replaces a key kept in clear by its wrapped form, unless another process did first. */
    async wrapSealingKeyInPlace(id: string, secret: string, wrapped: string): Promise<boolean> {
      const result = await writeSealingKeys((trx) =>
        trx
          .updateTable("sealing_keys")
          .set({ secret: null, wrapped })
          .where("id", "=", id)
          .where("secret", "=", secret)
          .executeTakeFirst(),
      );
      return result.numUpdatedRows === 1n;
    },

    /**
     * Replaces every wrapped key at once (`rewrap`), in one transaction: only if the keys are
     * exactly those given, each still wrapped as read (false: nothing changed).
     */
    rewrapSealingKeys(keys: { id: string; from: string; to: string }[]): Promise<boolean> {
      return database.write(async (db) => {
        const trx = await db.startTransaction().execute();
        try {
          // On SQLite the first statement writes, so the transaction holds the write lock from
          // its start and what it counts below is the latest. On PostgreSQL: the writers' lock.
          if (database.engine === "postgres") {
            await sql`SELECT pg_advisory_xact_lock(${SEALING_KEYS_LOCK})`.execute(trx);
          }
          let replaced = 0;
          for (const key of keys) {
            const result = await trx
              .updateTable("sealing_keys")
              .set({ wrapped: key.to })
              .where("id", "=", key.id)
              .where("wrapped", "=", key.from)
              .executeTakeFirst();
            replaced += Number(result.numUpdatedRows);
          }
          const { count } = await trx
            .selectFrom("sealing_keys")
            .select((eb) => eb.fn.countAll<number | string>().as("count"))
            .executeTakeFirstOrThrow();
          const exact = replaced === keys.length && Number(count) === keys.length;
          await (exact ? trx.commit() : trx.rollback()).execute();
          return exact;
        } catch (error) {
          await trx.rollback().execute();
          throw error;
        }
      });
    },
  };
}

export type Store = ReturnType<typeof createStore>;

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

/**
 * Which rows a cached key read depends on changed since the previous call: the change log that
 * triggers write in the same transaction as each change (store/key-changes.ts).
 */
export function keyChangeCheck(database: OpenedDatabase<IdentityDatabase>): ChangeCheck {
  return createKeyChangeCheck(database);
}
