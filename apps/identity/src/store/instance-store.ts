import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

/** A serving instance as it last announced itself. */
interface RunningInstance {
  id: string;
  /** `secretCheck` of the secret it runs under: equal checks, equal secrets. */
  secretCheck: string;
  startedAt: number;
  seenAt: number;
}

/**
 * The serving instances of the identity service (table `instances`, migration 0015): each
 * announces itself at start and every `INSTANCE_ANNOUNCE_MS` while it serves, with a check value
 * of its secret, and leaves when it closes. `sealing-keys rotate` reads it to refuse a rotation
 * while an instance runs under another secret.
 */
export function createInstanceStore(database: StoreDatabase<IdentityDatabase>) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    async announce(instance: RunningInstance): Promise<void> {
      await database.write((db) =>
        db
          .insertInto("instances")
          .values({
            id: instance.id,
            secret_check: instance.secretCheck,
            started_at: instance.startedAt,
            seen_at: instance.seenAt,
          })
          .onConflict((oc) => oc.column("id").doUpdateSet({ seen_at: instance.seenAt }))
          .execute(),
      );
    },

    async leave(id: string): Promise<void> {
      await database.write((db) => db.deleteFrom("instances").where("id", "=", id).execute());
    },

    /** The instances seen since `since` that run under another secret than `secretCheck`'s. */
    async underAnotherSecret(secretCheck: string, since: number): Promise<RunningInstance[]> {
      const rows = await reads
        .selectFrom("instances")
        .selectAll()
        .where("seen_at", ">=", since)
        .where("secret_check", "<>", secretCheck)
        .orderBy("seen_at", "desc")
        .execute();
      return rows.map((row) => ({
        id: row.id,
        secretCheck: row.secret_check,
        startedAt: Number(row.started_at),
        seenAt: Number(row.seen_at),
      }));
    },
  };
}

export type InstanceStore = ReturnType<typeof createInstanceStore>;
