import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { migrateToLatest, type OpenedDatabase, openDatabase } from "@agentpass/db";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import fc from "fast-check";
import { sql } from "kysely";
import { notesMigrations } from "../src/store/migrations.ts";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore } from "../src/store/store.ts";

const RUNS = Math.max(20, Math.trunc(Number(process.env.PROPERTY_RUNS ?? 2_000) / 20));
const WORDS = ["alpha", "bravo", "charlie", "delta"];
const SEARCHES = [...WORDS, "alpha bravo", "ALPHA", "harl", "nothing"];
const PAGES = [
  [1, 0],
  [3, 0],
  [5, 2],
  [20, 0],
  [100, 0],
  [40, 70],
  [3, 200],
] as const;

/** What a person does to their notes: the clock may stand still (ties) or go back. */
const step = fc.constantFrom(0, 0, 1, 1, 7, -3);
const words = fc.subarray(WORDS);
const operation = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("create" as const), words, step }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("update" as const), pick: fc.nat(), words, step }),
  },
  // A note whose time moved without its rowid: as written before migration 0005, or by a tool
  // beside the service. The search must still be exact (it proves its page or orders every match).
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("touch" as const), pick: fc.nat(), step }),
  },
);

for (const engine of testEngines()) {
  describe(`search order against a reference, writes in any order of time (${engine})`, () => {
    let test: TestDatabase;
    let database: OpenedDatabase<NotesDatabase>;
    before(async () => {
      test = await createTestDatabase(engine);
      database = openDatabase<NotesDatabase>({ ...test, fileName: "notes.sqlite" });
      await migrateToLatest(database.db, "notes", notesMigrations(engine));
    });
    after(async () => {
      await database.close();
      await test.drop();
    });

    it("gives every page and total a filter and sort of all the notes gives", async () => {
      const store = createNotesStore(database);
      const { db } = database;
      await fc.assert(
        fc.asyncProperty(
          fc.array(operation, { minLength: 1, maxLength: 60 }),
          async (operations) => {
            const user = await store.addUser(`${randomUUID()}@example.com`, 0);
            assert.ok(user);
            const ids: string[] = [];
            let now = 1_000;
            for (const op of operations) {
              now += op.step;
              const title = `${op.kind} ${op.kind === "touch" ? "" : op.words.join(" ")}`;
              if (op.kind === "create") {
                const note = await store.createNote(
                  user.id,
                  { title, content: [], contentText: op.words.length > 1 ? "x" : "" },
                  [],
                  now,
                );
                ids.push(note.id);
              } else if (ids.length > 0) {
                const id = ids[op.pick % ids.length] as string;
                if (op.kind === "update") {
                  const fields = op.words.length % 2 ? { title } : { title, contentText: "y" };
                  await store.updateNote(user.id, id, fields, undefined, now);
                } else {
                  await sql`UPDATE notes SET updated_at = ${now} WHERE id = ${id}`.execute(db);
                }
              }
            }
            const all = (
              await sql<{ id: string; text: string; updated_at: number }>`SELECT id,
              title || ${"\n"} || content_text AS text, updated_at
              FROM notes WHERE user_id = ${user.id}`.execute(db)
            ).rows.sort(
              (a, b) => Number(b.updated_at) - Number(a.updated_at) || (a.id < b.id ? -1 : 1),
            );
            for (const search of SEARCHES) {
              const terms = search.toLowerCase().split(" ");
              const expected = all.filter((note) =>
                terms.every((term) => note.text.toLowerCase().includes(term)),
              );
              for (const [limit, offset] of PAGES) {
                const page = await store.listNotes(user.id, { search, limit, offset });
                const label = `${search} ${limit}/${offset}`;
                assert.equal(page.total, expected.length, label);
                assert.deepEqual(
                  page.notes.map((note) => note.id),
                  expected.slice(offset, offset + limit).map((note) => note.id),
                  label,
                );
              }
            }
          },
        ),
        { numRuns: RUNS },
      );
    });

    if (engine === "sqlite") {
      it("gives a note the next rowid of its user's range on every write, and refuses one outside it", async () => {
        const store = createNotesStore(database);
        const { db } = database;
        const user = await store.addUser(`${randomUUID()}@example.com`, 0);
        assert.ok(user);
        const seqs = async () =>
          (
            await sql<{ id: string; seq: number }>`SELECT id, seq FROM notes
              WHERE user_id = ${user.id} ORDER BY seq`.execute(db)
          ).rows.map((row) => row.id);
        const first = await store.createNote(
          user.id,
          { title: "first", content: [], contentText: "" },
          [],
          1,
        );
        const second = await store.createNote(
          user.id,
          { title: "second", content: [], contentText: "" },
          [],
          2,
        );
        assert.deepEqual(await seqs(), [first.id, second.id]);
        await store.updateNote(user.id, first.id, { contentText: "edited" }, undefined, 3);
        assert.deepEqual(await seqs(), [second.id, first.id]);
        // The full-text index follows the note to its new rowid.
        const found = await store.listNotes(user.id, { search: "edited", limit: 5, offset: 0 });
        assert.deepEqual(
          found.notes.map((note) => note.id),
          [first.id],
        );
        const firstSearch = await store.listNotes(user.id, {
          search: "first",
          limit: 5,
          offset: 0,
        });
        assert.equal(firstSearch.total, 1);
        await assert.rejects(
          sql`UPDATE notes SET seq = seq + (1 << 32) WHERE id = ${first.id}`.execute(db),
          /seq must lie in its user's range/,
        );
      });
    }
  });
}
