import { createPreparedRows, type StoreDatabase } from "@agentpass/db";
import { type Kysely, sql } from "kysely";
import type { IdentityDatabase } from "./schema.ts";
import type { Store } from "./store.ts";

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

type SealingKeyOperations =
  | "listSealingKeys"
  | "addSealingKey"
  | "wrapSealingKeyInPlace"
  | "rewrapSealingKeys";

/**
 * The sealing keys of `Store`, kept wrapped (`domain/sealing-keys.ts` wraps and unwraps them).
 * Each write holds only if the keys are as the caller last read them, so instances starting or
 * rotating together keep one newest key.
 */
export function createSealingKeyStore(
  database: StoreDatabase<IdentityDatabase>,
): Pick<Store, SealingKeyOperations> {
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
    async listSealingKeys(): Promise<StoredSealingKey[]> {
      return (await sealingKeys()).map((row) => ({ ...row }));
    },

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
