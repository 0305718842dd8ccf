import {
  type CacheLookups,
  type ChangeCheck,
  createReadCaches,
  type HotRead,
  type StoreDatabase,
} from "@agentpass/db";
import { sql } from "kysely";
import { type Account, createAccountStore } from "./account-store.ts";
import { createKeyChangeCheck, touchesSealingKeys } from "./key-changes.ts";
import {
  createKeyStore,
  type KeyByHash,
  type KeyRecord,
  type KeyTableName,
  type NewKey,
  type TokenOwner,
} from "./key-store.ts";
import { createPartnerStore, type Partner, type PartnerDetails } from "./partner-store.ts";
import type { IdentityDatabase } from "./schema.ts";
import { createSealingKeyStore, type StoredSealingKey } from "./sealing-key-store.ts";

export type { Account } from "./account-store.ts";
export type { KeyByHash, KeyRecord, KeyTableName, NewKey, TokenOwner } from "./key-store.ts";
export type { Partner, PartnerDetails } from "./partner-store.ts";
export type { StoredSealingKey } from "./sealing-key-store.ts";

/**
 * The identity service's accounts, keys, partners and sealing keys: plain data in, plain data
 * out, the same on SQLite and PostgreSQL. Every write goes through the database's one write
 * path, so this process's key caches see it on the next request. It hands out no query
 * builder: what the service needs of its database is an operation here.
 */
export interface Store {
  /** Fails (rejects) when the database does not answer a trivial query: the readiness check. */
  ping(): Promise<void>;

  /**
   * Starts the reads of one verify or mint; its `HotRead` is what the cached reads
   * (`findKeyByHash`, `findTokenOwner`) take, so none runs before it. Key reads are cached until
   * their key changes, which is checked here by a check that starts after the call (the change
   * log `key_changes`; on SQLite read only when `PRAGMA data_version` or this process's writes
   * say something changed), so a revocation by any process or instance holds from the next
   * request on.
   */
  beginHotRead(): Promise<HotRead>;
  /**
   * Runs `reload` inside the change check of `beginHotRead` whenever the database may have
   * changed, before the requests that awaited the check go on: the sealing keys are re-read.
   */
  onKeysChanged(reload: () => Promise<void>): void;
  /** How often the key caches answered a read, and how often they read the database. */
  readonly keyCacheLookups: CacheLookups;

  /** Creates the account of `email`; null when one already has that email. */
  createAccount(email: string, createdAt: number): Promise<Account | null>;
  /** The account with that email. */
  findAccountByEmail(email: string): Promise<Account | undefined>;
  /** Deletes an account with its keys, partners and their keys: none verifies again. */
  deleteAccount(accountId: string): Promise<void>;

  /** Stores a new key by its hash (the key itself is never stored); user keys made by hand. */
  insertKey(table: KeyTableName, key: NewKey): Promise<KeyRecord>;
  /** The key whose hash is `secretHash`, revoked or not: cached, read after `beginHotRead`. */
  findKeyByHash(
    checked: HotRead,
    table: KeyTableName,
    secretHash: string,
  ): Promise<KeyByHash | undefined>;
  /** The key with that id, revoked or not. */
  findKeyById(table: KeyTableName, id: string): Promise<KeyRecord | undefined>;
  /**
   * The keys of an account or partner, newest first. An account's are those made by hand: the
   * keys of its grants (a client's) are listed as grants (`OAuthStore.listGrants`).
   */
  listKeys(table: KeyTableName, ownerId: string): Promise<KeyRecord[]>;
  /** Revokes a key; false when no unrevoked key has that id. */
  revokeKey(table: KeyTableName, id: string, revokedAt: number): Promise<boolean>;
  /** Renames a key of `ownerId`; false when it has no key with that id. */
  renameKey(
    table: KeyTableName,
    key: { id: string; ownerId: string; name: string },
  ): Promise<boolean>;
  /** Records last use times gathered in memory, in one transaction. Never moves time back. */
  recordKeyUse(table: KeyTableName, uses: ReadonlyMap<string, number>): Promise<void>;
  /**
   * The account and revocation of the user key a session token names, in one cached read, read
   * after `beginHotRead`.
   */
  findTokenOwner(checked: HotRead, userKeyId: string): Promise<TokenOwner | undefined>;

  /** Creates a partner of `ownerAccountId`, its website not yet verified. */
  createPartner(
    partner: PartnerDetails & Pick<Partner, "ownerAccountId" | "createdAt">,
  ): Promise<Partner>;
  findPartner(id: string): Promise<Partner | undefined>;
  /** The partners an account owns, oldest first. */
  listPartnersOwnedBy(accountId: string): Promise<Partner[]>;
  /** The public directory: listed partners by name, less those suspended. */
  listListedPartners(): Promise<Partner[]>;
  /** Changes a partner's details; `clearSiteVerification` in the same write. */
  updatePartner(
    id: string,
    fields: PartnerDetails,
    options: { clearSiteVerification: boolean },
  ): Promise<void>;
  /**
   * Gives a partner its site token unless it has one; returns the token it has after the call
   * (two pages shown at once both show the one that was kept).
   */
  keepPartnerSiteToken(id: string, token: string): Promise<string | undefined>;
  /** Records the outcome of a website check: the origin found verified and when, or null. */
  recordPartnerSiteCheck(
    id: string,
    verified: { origin: string; at: number } | null,
  ): Promise<void>;
  /**
   * Deletes a partner of `ownerAccountId` with its keys, usage counts and activity rows (the
   * foreign keys cascade); false when the account owns no partner with that id.
   */
  deletePartner(id: string, ownerAccountId: string): Promise<boolean>;

  /** Every sealing key, newest first (the one that seals). A few rows. */
  listSealingKeys(): Promise<StoredSealingKey[]>;
  /**
   * Adds a sealing key, newer than every other whatever the clocks say, only if the keys are
   * as the caller last read them: with `newest` null, only into an empty table (processes
   * starting together make one key); else only while the newest key is still wrapped as read
   * (a rewrap in between would leave the new key under the old secret). False: nothing added.
   */
  addSealingKey(
    key: { id: string; wrapped: string; createdAt: number },
    newest: { id: string; wrapped: string } | null,
  ): Promise<boolean>;
  /** Replaces a key kept in clear by its wrapped form, unless another process did first. */
  wrapSealingKeyInPlace(id: string, secret: string, wrapped: string): Promise<boolean>;
  /**
   * Replaces every wrapped key at once (`rewrap`), in one transaction: only if the keys are
   * exactly those given, each still wrapped as read (false: nothing changed).
   */
  rewrapSealingKeys(keys: { id: string; from: string; to: string }[]): Promise<boolean>;
}

/**
 * The store over `database`: one factory per kind of row (`account-store.ts`, `key-store.ts`,
 * `partner-store.ts`, `sealing-key-store.ts`), sharing the key caches that `beginHotRead`
 * checks. A key change drops that key's cached reads only (store/key-changes.ts); a change of
 * the sealing keys runs the reload given to `onKeysChanged`.
 */
export function createStore(database: StoreDatabase<IdentityDatabase>): Store {
  let keysChanged: (() => Promise<void>) | undefined;
  const caches = createReadCaches(keyChangeCheck(database), async (changes) => {
    if (touchesSealingKeys(changes)) await keysChanged?.();
  });
  return {
    async ping() {
      await sql`SELECT 1`.execute(database.db);
    },
    beginHotRead: () => caches.beginRequest(),
    keyCacheLookups: caches.lookups,
    onKeysChanged(reload) {
      keysChanged = reload;
    },
    ...createAccountStore(database),
    ...createKeyStore(database, caches),
    ...createPartnerStore(database),
    ...createSealingKeyStore(database),
  };
}

/**
 * Which rows a cached key read depends on changed since the previous call: the change log that
 * triggers write in the same transaction as each change (store/key-changes.ts).
 */
export function keyChangeCheck(database: StoreDatabase<IdentityDatabase>): ChangeCheck {
  return createKeyChangeCheck(database);
}
