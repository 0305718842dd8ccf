import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { migrateToLatest, openDatabase } from "@agentpass/db";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { sql } from "kysely";
import pino from "pino";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";
import { notesMigrations } from "../src/store/migrations.ts";
import { nextNoteSeq } from "../src/store/notes.ts";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore } from "../src/store/store.ts";

/** The migrations before `name`, to bring a database to the schema a release before it had. */
function migrationsBefore(engine: "sqlite" | "postgres", name: string) {
  return Object.fromEntries(
    Object.entries(notesMigrations(engine)).filter(([migration]) => migration < name),
  );
}

/** A note's JSON as a list wrote it up to its tags, which 0006 kept as `listed_json`. */
function listingOf(
  id: string,
  title: string,
  content: string,
  contentText: string,
  createdAt: number,
  updatedAt: number,
): string {
  const partial = JSON.stringify({
    id,
    title,
    content: JSON.parse(content),
    contentText,
    createdAt: new Date(createdAt).toISOString(),
    updatedAt: new Date(updatedAt).toISOString(),
    tags: [],
  });
  return partial.slice(0, -"[]}".length);
}

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

  it("renumbers the notes written before 0005 in the order of their last writes, and searches find them as before", async () => {
    const test = await createTestDatabase("sqlite");
    const database = openDatabase<NotesDatabase>({ dataDir: test.dataDir, fileName: "n.sqlite" });
    try {
      const { db } = database;
      const all = notesMigrations("sqlite");
      const before = Object.fromEntries(
        Object.entries(all).filter(([name]) => name < "0005_seq_follows_writes"),
      );
      await migrateToLatest(db, "notes", before);
      const store = createNotesStore(database);
      const users = [
        await store.addUser("a@example.com", 0),
        await store.addUser("b@example.com", 0),
      ].map((user) => user?.id ?? "");
      // Written as before 0005: rowids in order of creation; then updated in another order, some
      // in the same millisecond (the list orders those by id).
      const ids: string[][] = [[], []];
      for (let n = 0; n < 40; n++) {
        const [user, id] = [users[n % 2] as string, randomUUID()];
        await sql`INSERT INTO notes (seq, id, user_id, title, content, content_text, created_at, updated_at)
          VALUES (${nextNoteSeq(user)}, ${id}, ${user}, ${`note ${n} ${n % 3 ? "plain" : "marked"}`},
            '[]', '', ${n}, ${n})`.execute(db);
        ids[n % 2]?.push(id);
      }
      for (const [i, id] of [...(ids[0] ?? []), ...(ids[1] ?? [])].entries()) {
        if (i % 4 === 1) {
          await sql`UPDATE notes SET updated_at = ${100 + (i % 3)}, title = title || ' edited'
            WHERE id = ${id}`.execute(db);
        }
      }
      const listOrder = async (user: string) =>
        (
          await sql<{ id: string }>`SELECT id FROM notes WHERE user_id = ${user}
            ORDER BY updated_at DESC, id`.execute(db)
        ).rows.map((row) => row.id);
      const orders = [await listOrder(users[0] as string), await listOrder(users[1] as string)];

      await migrateToLatest(db, "notes", all);

      for (const [u, user] of users.entries()) {
        const bySeq = await sql<{ id: string; seq: number; number: number }>`SELECT n.id, n.seq,
          u.number FROM notes n JOIN users u ON u.id = n.user_id
          WHERE n.user_id = ${user} ORDER BY n.seq DESC`.execute(db);
        assert.deepEqual(
          bySeq.rows.map((row) => row.id),
          orders[u],
        );
        assert.ok(bySeq.rows.every((row) => Math.floor(row.seq / 2 ** 32) === row.number));
        for (const term of ["marked", "edited", "plain edited"]) {
          const found = await store.listNotes(user, { search: term, limit: 100, offset: 0 });
          const expected = (
            await sql<{ id: string }>`SELECT id FROM notes WHERE user_id = ${user}
              AND title LIKE ${`%${term.split(" ")[0]}%`} AND title LIKE ${`%${term.split(" ").at(-1)}%`}
              ORDER BY updated_at DESC, id`.execute(db)
          ).rows.map((row) => row.id);
          assert.ok(expected.length > 0, term);
          assert.deepEqual(
            found.notes.map((note) => note.id),
            expected,
            term,
          );
        }
      }
      // From now on a write moves the note to the end of its user's range, and no further.
      const last = ids[0]?.[0] as string;
      await store.updateNote(users[0] as string, last, { title: "moved" }, undefined, 500);
      const top = await sql<{ id: string }>`SELECT id FROM notes WHERE user_id = ${users[0]}
        ORDER BY seq DESC LIMIT 1`.execute(db);
      assert.equal(top.rows[0]?.id, last);
      await assert.rejects(
        sql`UPDATE notes SET seq = seq + (1 << 32) WHERE id = ${last}`.execute(db),
        /seq must lie in its user's range/,
      );
    } finally {
      await database.close();
      await test.drop();
    }
  });
});

for (const engine of testEngines()) {
  describe(`notes migrations 0006 and 0008 (${engine})`, () => {
    it("0006 wrote every existing note's listing and refused a note without one; 0008 drops them, and notes are written and listed without", async () => {
      const test = await createTestDatabase(engine);
      const database = openDatabase<NotesDatabase>({ ...test, fileName: "n.sqlite" });
      try {
        const { db } = database;
        await migrateToLatest(db, "notes", migrationsBefore(engine, "0006_listed_json"));
        const user = (await createNotesStore(database).addUser("a@example.com", 0))?.id ?? "";
        const odd = '\u0001\u001f\u007f"\\</script>\u2028\ud83d\ude00é\n\t';
        const insert = (n: number, title: string, content: string) =>
          sql`INSERT INTO notes (${sql.raw(engine === "sqlite" ? "seq, " : "")}id, user_id,
              title, content, content_text, created_at, updated_at)
            VALUES (${engine === "sqlite" ? sql`${nextNoteSeq(user)}, ` : sql``}${randomUUID()},
              ${user}, ${title}, ${content}, ${`${odd}${n}`}, ${n}, ${n * 1_000_003})`.execute(db);
        // More than one batch of the backfill (1,000), written as before 0006.
        for (let n = 0; n < 1_100; n++) {
          const title = n % 7 ? `note ${n}` : `${odd}${n}`;
          await insert(n, title, n % 5 ? "[]" : JSON.stringify({ __proto__: null, odd, n: -n }));
        }
        await migrateToLatest(db, "notes", migrationsBefore(engine, "0008_drop_listed_json"));
        const rows = await sql<{
          id: string;
          title: string;
          content: string;
          content_text: string;
          created_at: number | string;
          updated_at: number | string;
          listed_json: string;
        }>`SELECT id, title, content, content_text, created_at, updated_at, listed_json
          FROM notes`.execute(db);
        assert.equal(rows.rows.length, 1_100);
        for (const row of rows.rows) {
          const [createdAt, updatedAt] = [Number(row.created_at), Number(row.updated_at)];
          const { id, title, content, content_text: text } = row;
          assert.equal(row.listed_json, listingOf(id, title, content, text, createdAt, updatedAt));
        }
        await assert.rejects(
          insert(1_100, "t", "[]"),
          engine === "sqlite"
            ? /a note needs its listed_json/
            : /null value in column "listed_json"/,
        );

        await migrateToLatest(db, "notes", notesMigrations(engine));
        const columns =
          engine === "sqlite"
            ? await sql<{ name: string }>`SELECT name FROM pragma_table_info('notes')`.execute(db)
            : await sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
                WHERE table_name = 'notes'`.execute(db);
        assert.ok(!columns.rows.some((column) => column.name === "listed_json"));
        await insert(1_100, "written after 0008", "[]");
        const store = createNotesStore(database);
        const page = await store.listNotes(user, { limit: 3, offset: 0 });
        assert.equal(page.total, 1_101);
        assert.equal(page.notes[0]?.title, "written after 0008");
        for (const note of page.notes) assert.deepEqual(await store.getNote(user, note.id), note);
        const found = await store.listNotes(user, { search: "after 0008", limit: 3, offset: 0 });
        assert.deepEqual(
          found.notes.map((note) => note.title),
          ["written after 0008"],
        );
      } finally {
        await database.close();
        await test.drop();
      }
    });
  });
}

for (const engine of testEngines()) {
  describe(`notes schema across releases (${engine})`, () => {
    it("starts beside a database a newer release migrated, saying so once; with MIGRATE_ON_START=false refuses one that lacks a migration", async () => {
      const test = await createTestDatabase(engine);
      const all = notesMigrations(engine);
      const last = Object.keys(all).sort().at(-1) as string;
      const database = openDatabase<NotesDatabase>({ ...test, fileName: "notes.sqlite" });
      const start = async (env: Record<string, string>) => {
        const loaded = loadNotesConfig({
          DATA_DIR: test.dataDir,
          DATABASE_URL: test.databaseUrl,
          AGENTPASS_PARTNER_KEY: "apk_unused",
          ...env,
        });
        if (!loaded.ok) throw new Error(loaded.error);
        const warnings: { migrations?: string[]; msg?: string }[] = [];
        const logger = pino(
          { level: "warn" },
          { write: (line: string) => warnings.push(JSON.parse(line)) },
        );
        const service = await openNotesService(loaded.config, { logger });
        await service.close();
        // No AgentPass answers here: the start's probe of the partner key logs that, as it should.
        return warnings.filter(
          (line) => line.msg?.startsWith("AgentPass cannot be reached") !== true,
        );
      };
      try {
        await database.migrate(
          "notes",
          Object.fromEntries(Object.entries(all).filter(([name]) => name !== last)),
        );
        await assert.rejects(
          start({ MIGRATE_ON_START: "false" }),
          new RegExp(`missing migration ${last}\\): run \`agentpass-notes migrate\` first$`),
        );
        assert.deepEqual(await start({}), []);
        await database.migrate("notes", {
          ...all,
          "0099_next_release": {
            async up(db) {
              await sql`ALTER TABLE notes ADD COLUMN pinned integer NOT NULL DEFAULT 0`.execute(db);
            },
          },
        });
        const warnings = await start({ MIGRATE_ON_START: "false" });
        assert.deepEqual(
          warnings.map((line) => line.migrations),
          [["0099_next_release"]],
        );
      } finally {
        await database.close();
        await test.drop();
      }
    });
  });
}
