import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { migrateToLatest, openDatabase } from "@agentpass/db";
import { createTestDatabase } from "@agentpass/db/testing";
import { sql } from "kysely";
import { notesMigrations } from "../src/store/migrations.ts";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore } from "../src/store/store.ts";

describe("notes migrations (sqlite)", () => {
  it("moves the notes written before 0004 into their users' ranges, and searches find them as before", async () => {
    const test = await createTestDatabase("sqlite");
    const database = openDatabase<NotesDatabase>({ dataDir: test.dataDir, fileName: "n.sqlite" });
    try {
      const { db } = database;
      const all = notesMigrations("sqlite");
      const before = Object.fromEntries(
        Object.entries(all).filter(([name]) => name < "0004_user_ranges"),
      );
      await migrateToLatest(db, "notes", before);
      // Written as the schema before 0004 wrote them: rowids in one sequence for every user.
      const users = [randomUUID(), randomUUID(), randomUUID()];
      for (const [i, id] of users.entries()) {
        await sql`INSERT INTO users (id, email, created_at) VALUES (${id}, ${`u${i}@example.com`}, 0)`.execute(
          db,
        );
      }
      for (let n = 0; n < 60; n++) {
        await sql`INSERT INTO notes (id, user_id, title, content, content_text, created_at, updated_at)
          VALUES (${randomUUID()}, ${users[n % 3]}, ${`note ${n} ${n % 2 ? "odd" : "even"}`}, '[]', '', ${n}, ${n})`.execute(
          db,
        );
      }
      const store = createNotesStore(database);
      const search = (user: string, term: string) =>
        store.listNotes(user, { search: term, limit: 100, offset: 0 });
      const [first = "", second = ""] = users;
      const earlier = await sql<{ id: string }>`SELECT id FROM notes
        WHERE user_id = ${first} AND title LIKE '%even%' ORDER BY updated_at DESC, id`.execute(db);
      assert.equal(earlier.rows.length, 10);

      await migrateToLatest(db, "notes", all);

      const strays = await sql<{ n: number }>`SELECT count(*) AS n FROM notes
        JOIN users u ON u.id = notes.user_id WHERE notes.seq >> 32 != u.number`.execute(db);
      assert.equal(strays.rows[0]?.n, 0);
      const found = await search(first, "even");
      assert.equal(found.total, 10);
      assert.deepEqual(
        found.notes.map((note) => note.id),
        earlier.rows.map((row) => row.id),
      );
      assert.equal((await search(second, "odd")).total, 10);
      // New users and notes take the next number and the next rowid of their range.
      const added = await store.addUser("new@example.com", 0);
      assert.ok(added);
      const note = await store.createNote(
        first,
        { title: "even later", content: [], contentText: "" },
        [],
        100,
      );
      assert.equal((await search(first, "even")).total, 11);
      assert.equal((await search(first, "even")).notes[0]?.id, note.id);
      const numbers = await sql<{
        number: number;
      }>`SELECT number FROM users ORDER BY number`.execute(db);
      assert.deepEqual(
        numbers.rows.map((row) => row.number),
        [1, 2, 3, 4],
      );
    } finally {
      await database.close();
      await test.drop();
    }
  });
});
