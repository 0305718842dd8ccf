import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import { newId } from "./ids.ts";
import { decodeTag } from "./rows.ts";
import type { NotesDatabase } from "./schema.ts";
import type { Tag } from "./types.ts";

/** A user's tags. Names are unique per user, ignoring case. */
export function createTags(database: Pick<StoreDatabase<NotesDatabase>, "db" | "write">) {
  const reads: ReadOnlyDb<NotesDatabase> = database.db;

  return {
    /** In tag order: by name ignoring case, then id. */
    async listTags(userId: string): Promise<Tag[]> {
      const rows = await reads
        .selectFrom("tags")
        .select(["id", "name", "created_at"])
        .where("user_id", "=", userId)
        .orderBy("name_key")
        .orderBy("id")
        .execute();
      return rows.map(decodeTag);
    },

    /** A new tag, or null when the user has one of that name (ignoring case). */
    async createTag(userId: string, name: string, now: number): Promise<Tag | null> {
      const id = newId();
      const inserted = await database.write((db) =>
        db
          .insertInto("tags")
          .values({ id, user_id: userId, name, name_key: nameKey(name), created_at: now })
          .onConflict((oc) => oc.columns(["user_id", "name_key"]).doNothing())
          .returning("id")
          .executeTakeFirst(),
      );
      return inserted ? { id, name, createdAt: now } : null;
    },

    /** Renames a tag: the tag, "exists" on a name clash, or undefined for another's tag. */
    async renameTag(userId: string, id: string, name: string): Promise<Tag | "exists" | undefined> {
      const clash = await reads
        .selectFrom("tags")
        .select("id")
        .where("user_id", "=", userId)
        .where("name_key", "=", nameKey(name))
        .where("id", "!=", id)
        .executeTakeFirst();
      if (clash) return "exists";
      const row = await database.write((db) =>
        db
          .updateTable("tags")
          .set({ name, name_key: nameKey(name) })
          .where("user_id", "=", userId)
          .where("id", "=", id)
          .returning(["id", "name", "created_at"])
          .executeTakeFirst(),
      );
      return row && decodeTag(row);
    },

    async deleteTag(userId: string, id: string): Promise<boolean> {
      const result = await database.write((db) =>
        db.deleteFrom("tags").where("user_id", "=", userId).where("id", "=", id).executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}

/** Tag names compare ignoring case. */
function nameKey(name: string): string {
  return name.toLowerCase();
}
