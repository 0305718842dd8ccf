import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type OpenedDatabase, openDatabase } from "@agentpass/db";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { notesMigrations } from "../src/store/migrations.ts";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore, type ListQuery, type Note } from "../src/store/store.ts";

const HOSTILE = '\u0001\u001f\u007f"\\</script>\u2028\u2029\ud83d\ude00é\n\t';

for (const engine of testEngines()) {
  for (const readerThreads of engine === "sqlite" ? [0, 2] : [0]) {
    describe(`every list gives the notes getNote gives (${engine}, ${readerThreads} reader threads)`, () => {
      let test: TestDatabase;
      let database: OpenedDatabase<NotesDatabase>;
      before(async () => {
        test = await createTestDatabase(engine);
        database = openDatabase<NotesDatabase>({
          ...test,
          fileName: "notes.sqlite",
          readerThreads,
        });
        await database.migrate("notes", notesMigrations(engine));
      });
      after(async () => {
        await database.close();
        await test.drop();
      });

      it("on a plain page, a tag's page and a search's, with their tags, documents and totals", async () => {
        const store = createNotesStore(database);
        const user = await store.addUser("lister@example.com", 1);
        assert.ok(user);
        const [zeta, alpha, odd] = [
          await store.createTag(user.id, "Zeta", 2),
          await store.createTag(user.id, "alpha", 3),
          await store.createTag(user.id, HOSTILE, 1_764_000_000_123),
        ];
        assert.ok(zeta && alpha && odd);
        const documents = [
          [],
          { __proto__: { x: 1 }, 10: true, b: [1e21, -0, 0.1, "\u2028"], a: null },
          "just a string",
          [{ nested: [HOSTILE] }],
        ];
        const created: Note[] = [];
        for (let n = 0; n < 12; n++) {
          const tagIds = [zeta.id, alpha.id, odd.id].filter((_, i) => (n >> i) & 1);
          created.push(
            await store.createNote(
              user.id,
              {
                title: `${n % 3 ? "plain" : "marked"} ${HOSTILE} ${n}`,
                content: JSON.parse(JSON.stringify(documents[n % documents.length])),
                contentText: n % 2 ? "ab odd" : "even",
              },
              tagIds,
              1_000 + n,
            ),
          );
        }
        // Every note as a single read gives it: the reference each list must match.
        const byId = new Map(created.map((note) => [note.id, note]));
        for (const note of created) assert.deepEqual(await store.getNote(user.id, note.id), note);
        const newestFirst = [...created].reverse();
        const cases: [ListQuery, Note[]][] = [
          [{ limit: 5, offset: 0 }, newestFirst],
          [{ limit: 500, offset: 3 }, newestFirst],
          [{ tagId: odd.id, limit: 4, offset: 1 }, newestFirst.filter((n) => has(n, odd.id))],
          [
            { search: "marked", limit: 3, offset: 0 },
            newestFirst.filter((n) => /marked/.test(n.title)),
          ],
          [
            { search: "ab", limit: 20, offset: 0 },
            newestFirst.filter((n) => n.contentText === "ab odd"),
          ],
          [
            { search: "plain", tagId: zeta.id, limit: 20, offset: 0 },
            newestFirst.filter((n) => /plain/.test(n.title) && has(n, zeta.id)),
          ],
          [{ search: "nothing", limit: 20, offset: 0 }, []],
          [
            { search: "marked", limit: 5, offset: 50 },
            newestFirst.filter((n) => /marked/.test(n.title)),
          ],
          [{ limit: 5, offset: 50 }, newestFirst],
        ];
        for (const [query, matching] of cases) {
          const page = await store.listNotes(user.id, query);
          const label = JSON.stringify(query);
          assert.equal(page.total, matching.length, label);
          assert.deepEqual(
            page.notes,
            matching.slice(query.offset, query.offset + query.limit),
            label,
          );
          for (const note of page.notes) assert.deepEqual(note, byId.get(note.id), label);
        }
        // Tags in tag order (by name ignoring case, then id), as getNote gives them.
        const all = created[7] as Note;
        assert.deepEqual(
          all.tags.map((t) => t.id),
          [odd, alpha, zeta].map((t) => t.id),
        );
      });
    });
  }
}

function has(note: Note, tagId: string): boolean {
  return note.tags.some((tag) => tag.id === tagId);
}
