import { randomBytes, randomUUID } from "node:crypto";
import { openDatabase } from "@agentpass/db";
import { sql } from "kysely";
import { notesMigrations } from "../apps/notes/src/store/migrations.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { createNotesStore } from "../apps/notes/src/store/store.ts";

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
/** A word every `SEARCH_EVERY`-th note carries, so a search has a known, realistic hit rate. */
export const SEARCH_TERM = "zeppelin";
const SEARCH_EVERY = 50;
const BATCH = 2000;

/**
 * Fills the notes database of a new user `email` with `count` notes before the server starts,
 * straight through SQL (creating them over HTTP would take longer than the benchmark). Returns
 * the user's id.
 */
export async function seedNotes(
  location: { databaseUrl: string | undefined; dataDir: string },
  email: string,
  count: number,
): Promise<string> {
  // Seeding writes large batches: no request deadline.
  const database = openDatabase<NotesDatabase>({
    ...location,
    fileName: "notes.sqlite",
    deadlineMs: 0,
  });
  try {
    await database.migrate("notes", notesMigrations(database.engine));
    const user = await createNotesStore(database).addUser(email, 0);
    if (!user) throw new Error(`${email} exists`);
    const userId = user.id;
    for (let offset = 0; offset < count; offset += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, count - offset) }, (_, i) => {
        const n = offset + i;
        const id = randomUUID();
        const title = `${words(4)}${n % SEARCH_EVERY === 0 ? ` ${SEARCH_TERM}` : ""}`;
        const contentText = words(20);
        return {
          // On SQLite a note's seq lies in its user's range (store/migrations.ts, 0004).
          ...(database.engine === "sqlite" && {
            seq: sql<number>`(SELECT number << 32 FROM users WHERE id = ${userId}) | ${n + 1}`,
          }),
          id,
          user_id: userId,
          title,
          content: "[]",
          content_text: contentText,
          created_at: n,
          updated_at: n,
        };
      });
      await database.db.insertInto("notes").values(rows).execute();
    }
    await sql`ANALYZE`.execute(database.db);
    return userId;
  } finally {
    await database.close();
  }
}

function words(count: number): string {
  return Array.from({ length: count }, () => {
    const bytes = randomBytes(3 + ((randomBytes(1)[0] as number) % 6));
    return Array.from(bytes, (byte) => LETTERS[byte % 26]).join("");
  }).join(" ");
}
