import { randomUUID } from "node:crypto";
import {
  createPreparedQuery,
  createReadCaches,
  type ReadOnlyDb,
  type StoreDatabase,
} from "@agentpass/db";
import { sql } from "kysely";
import { decodeUser, type UserRow } from "./rows.ts";
import type { NotesDatabase } from "./schema.ts";
import type { User } from "./types.ts";

/** The notes API's users: each is an AgentPass account, known here by its email. */
export function createUsers(
  database: Pick<
    StoreDatabase<NotesDatabase>,
    "db" | "engine" | "write" | "handles" | "hasChanged"
  >,
) {
  const reads: ReadOnlyDb<NotesDatabase> = database.db;
  // Every authenticated request looks its user up: prepared, without the query builder.
  const userByEmail = createPreparedQuery<UserRow>(
    database,
    "SELECT id, email, created_at FROM users WHERE email = ?",
  );
  const lookUp = async (email: string): Promise<User | undefined> => {
    const row = await userByEmail(email);
    return row && Object.freeze(decodeUser(row));
  };
  // The lookups are cached behind one change check an event-loop turn, so a user added or
  // removed by any process or instance, the admin CLI included, is seen by the next request:
  // on SQLite `hasChanged` (any commit; this is its only caller in the notes API), on
  // PostgreSQL the users' change counter (migrations.ts, 0010). A lookup costs a statement: on
  // SQLite a read transaction of its own, on PostgreSQL a round trip.
  const changes = database.hasChanged ?? postgresUserChanges(database);
  const caches = createReadCaches(changes);
  const cachedLookUp = caches.cached(lookUp);

  return {
    /** How often the users' cache answered a lookup, and how often it read the database. */
    userCacheLookups: caches.lookups,

    async findUserByEmail(email: string): Promise<User | undefined> {
      return cachedLookUp(await caches.beginRequest(), email);
    },

    /** A new user, or null when one has that email. */
    async addUser(email: string, createdAt: number): Promise<User | null> {
      const user = { id: randomUUID(), email, created_at: createdAt };
      const inserted = await database.write((db) =>
        db
          .insertInto("users")
          .values({
            ...user,
            // SQLite: the number whose range holds the user's notes (migrations.ts, 0004).
            ...(database.engine === "sqlite" && {
              number: sql<number>`(SELECT coalesce(max(number), 0) + 1 FROM users)`,
            }),
          })
          .onConflict((oc) => oc.column("email").doNothing())
          .returning("id")
          .executeTakeFirst(),
      );
      return inserted ? decodeUser(user) : null;
    },

    async listUsers(): Promise<User[]> {
      const rows = await reads
        .selectFrom("users")
        .select(["id", "email", "created_at"])
        .orderBy("email")
        .execute();
      return rows.map(decodeUser);
    },

    /** Removes a user with every note and tag they have. */
    async removeUser(email: string): Promise<boolean> {
      const result = await database.write((db) =>
        db.deleteFrom("users").where("email", "=", email).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}

/**
 * PostgreSQL: whether any statement has added, removed or renamed users since the last call,
 * by the counter the users' statement trigger bumps in the same transaction (migrations.ts,
 * 0010): one statement, whatever the number of users.
 */
function postgresUserChanges(
  database: Pick<StoreDatabase<NotesDatabase>, "handles">,
): () => Promise<boolean> {
  const version = createPreparedQuery<{ version: number }>(
    database,
    "SELECT version FROM user_changes",
  );
  let seen: number | undefined;
  return async () => {
    const current = (await version())?.version;
    if (current !== undefined && current === seen) return false;
    seen = current;
    return true;
  };
}
