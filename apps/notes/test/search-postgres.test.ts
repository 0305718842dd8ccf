import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type OpenedDatabase, openDatabase } from "@agentpass/db";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { sql } from "kysely";
import pg from "pg";
import { notesMigrations } from "../src/store/migrations.ts";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore } from "../src/store/store.ts";

const NOW = Date.UTC(2026, 10, 27, 12);

/**
 * PostgreSQL's search (docs/notes-api.md, "Search"): on the stored lowercased text and its own
 * trigram index, and one round trip a statement, its budget set on its connection when opened.
 */
// The suite runs where the engines under test include PostgreSQL (`npm run test:all`).
for (const engine of testEngines().filter((name) => name === "postgres"))
  describe(`notes search (${engine})`, () => {
    let test: TestDatabase;
    let database: OpenedDatabase<NotesDatabase>;
    let store: ReturnType<typeof createNotesStore>;
    let userId: string;

    before(async () => {
      test = await createTestDatabase(engine);
      database = openDatabase<NotesDatabase>({
        databaseUrl: test.databaseUrl,
        dataDir: test.dataDir,
        fileName: "notes.sqlite",
      });
      await database.migrate("notes", notesMigrations(engine));
      store = createNotesStore(database, { searchTimeoutMs: 750 });
      const user = await store.addUser("search@example.com", NOW);
      assert.ok(user);
      userId = user.id;
      for (const [index, title] of ["Grocery LIST", "Trip plans", "Ünïcode NOTES"].entries()) {
        const fields = { title, content: { text: `body ${index}` }, contentText: `body ${index}` };
        await store.createNote(userId, fields, [], NOW + index);
      }
    });

    after(async () => {
      await database?.close();
      await test?.drop();
    });

    it("matches the lowercased title and text, as ILIKE would", async () => {
      const page = await store.listNotes(userId, { search: "list", limit: 20, offset: 0 });
      assert.deepEqual(
        page.notes.map((note) => note.title),
        ["Grocery LIST"],
      );
      const unicode = await store.listNotes(userId, { search: "ÜNÏ", limit: 20, offset: 0 });
      assert.deepEqual(
        unicode.notes.map((note) => note.title),
        ["Ünïcode NOTES"],
      );
    });

    it("keeps the stored text in step with an update", async () => {
      const created = await store.createNote(
        userId,
        { title: "Before", content: { text: "x" }, contentText: "x" },
        [],
        NOW + 10,
      );
      await store.updateNote(userId, created.id, { title: "Renamed AFTER" }, undefined, NOW + 11);
      const stored = await sql<{ search_text: string }>`
      SELECT search_text FROM notes WHERE id = ${created.id}`.execute(database.db);
      assert.equal(stored.rows[0]?.search_text, "renamed after\nx");
    });

    it("plans the search on the stored text's trigram index", async () => {
      // On three rows a scan of them all is cheaper: the planner is told it is not.
      const plan = await database.db.transaction().execute(async (trx) => {
        await sql`SET LOCAL enable_seqscan = off`.execute(trx);
        return sql<{ "QUERY PLAN": string }>`EXPLAIN
          SELECT id FROM notes n WHERE n.search_text LIKE '%list%'`.execute(trx);
      });
      const text = plan.rows.map((row) => row["QUERY PLAN"]).join("\n");
      assert.match(text, /notes_search_text/, text);
    });

    it("sends one statement to the server per search, no BEGIN, SET LOCAL or COMMIT", async () => {
      const sent: string[] = [];
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const [first] = args;
        sent.push(typeof first === "string" ? first : String((first as { text?: string }).text));
        return (query as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof query;
      try {
        // The first search opens the searches' connection; the second runs on it.
        await store.listNotes(userId, { search: "plans", limit: 20, offset: 0 });
        sent.length = 0;
        const page = await store.listNotes(userId, { search: "trip", limit: 20, offset: 0 });
        assert.equal(page.total, 1);
      } finally {
        pg.Client.prototype.query = query;
      }
      assert.equal(sent.length, 1, sent.join("\n---\n"));
      assert.doesNotMatch(sent[0] as string, /^\s*(BEGIN|SET|COMMIT)/i);
    });
  });
