/**
 * Search and list latency of the notes store over a large data set, on SQLite or PostgreSQL
 * (DATABASE_URL), with the query plans that show the index at work.
 *
 *   node bench/notes-search.ts                         # 1,000,000 notes, 100,000 for one user
 *   node bench/notes-search.ts --total 100000 --user 20000 --runs 50
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/notes-search.ts
 *
 * PostgreSQL runs in a database of its own, created and dropped here.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "@agentpass/db";
import { sql } from "kysely";
import pg from "pg";
import { NOTES_CACHE_MB } from "../apps/notes/src/service.ts";
import { filteredListQueries } from "../apps/notes/src/store/filtered-list.ts";
import { notesMigrations } from "../apps/notes/src/store/migrations.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { createNotesStore } from "../apps/notes/src/store/store.ts";

const { values } = parseArgs({
  options: {
    total: { type: "string", default: "1000000" },
    user: { type: "string", default: "100000" },
    runs: { type: "string", default: "100" },
  },
});
const TOTAL = Number(values.total);
const USER_NOTES = Number(values.user);
const RUNS = Number(values.runs);
const BATCH = 5000;

// A vocabulary of random words of 4 to 9 letters; pick() draws them Zipf-like, as in prose.
const LETTERS = "abcdefghijklmnopqrstuvwxyz";
const VOCABULARY = Array.from({ length: 20_000 }, () => {
  const bytes = randomBytes(4 + ((randomBytes(1)[0] as number) % 6));
  return Array.from(bytes, (byte) => LETTERS[byte % 26]).join("");
});

function pick(): string {
  // Zipf-like: low indexes are common.
  const r = randomBytes(4).readUInt32BE() / 2 ** 32;
  return VOCABULARY[Math.floor(VOCABULARY.length * r ** 3)] as string;
}

function sentence(words: number): string {
  return Array.from({ length: words }, pick).join(" ");
}

const adminUrl = process.env.DATABASE_URL;
const dataDir = mkdtempSync(join(tmpdir(), "agentpass-bench-notes-"));
let databaseUrl: string | undefined;
let dropDatabase = async () => {};
if (adminUrl) {
  const name = `agentpass_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  databaseUrl = url.toString();
  dropDatabase = async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  };
}

// Opened as the notes API opens it (the same SQLite page cache).
const database = openDatabase<NotesDatabase>({
  databaseUrl,
  dataDir,
  fileName: "notes.sqlite",
  cacheMb: NOTES_CACHE_MB,
});
try {
  await database.migrate("notes", notesMigrations(database.engine));
  const store = createNotesStore(database);
  const users: string[] = [];
  for (let i = 0; i < Math.max(2, Math.ceil((TOTAL - USER_NOTES) / 10_000) + 1); i++) {
    const user = await store.addUser(`user${i}@example.com`, 0);
    if (!user) throw new Error("user exists");
    users.push(user.id);
  }
  const [target = ""] = users;
  /** How many notes each user has so far: the offset of the next one's seq in their range. */
  const written = new Map<string, number>();

  const started = performance.now();
  const rareEvery = 1000; // "zeppelin" appears in 0.1% of the user's notes
  for (let offset = 0; offset < TOTAL; offset += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, TOTAL - offset) }, (_, i) => {
      const n = offset + i;
      const owner =
        n < USER_NOTES ? target : (users[1 + ((n - USER_NOTES) % (users.length - 1))] as string);
      const rare = n % rareEvery === 0 ? " zeppelin" : "";
      const ordinal = (written.get(owner) ?? 0) + 1;
      written.set(owner, ordinal);
      const id = randomUUID();
      const title = `${sentence(4)}${rare}`;
      const contentText = sentence(20);
      return {
        ordinal,
        id,
        user_id: owner,
        title,
        content: "[]",
        content_text: contentText,
        created_at: n,
        updated_at: n,
      };
    });
    await insertBatch(rows);
    if ((offset / BATCH) % 40 === 0)
      process.stderr.write(`\r seeded ${offset + rows.length} notes`);
  }
  process.stderr.write(
    `\r seeded ${TOTAL} notes in ${((performance.now() - started) / 1000).toFixed(0)} s\n`,
  );
  await sql`ANALYZE`.execute(database.db);

  const common = VOCABULARY[0] as string;
  const medium = VOCABULARY[40] as string;
  const cases: [string, Parameters<typeof store.listNotes>[1]][] = [
    ["list limit=20", { limit: 20, offset: 0 }],
    ["list limit=100", { limit: 100, offset: 0 }],
    ["list limit=20 offset=50000", { limit: 20, offset: 50_000 }],
    [`search rare "zeppelin"`, { search: "zeppelin", limit: 20, offset: 0 }],
    [`search medium "${medium}"`, { search: medium, limit: 20, offset: 0 }],
    [`search common "${common}"`, { search: common, limit: 20, offset: 0 }],
    [
      `search two terms "${common} zeppelin"`,
      { search: `${common} zeppelin`, limit: 20, offset: 0 },
    ],
    [`search short "zu" (no trigram)`, { search: "zu", limit: 20, offset: 0 }],
  ];
  console.log(
    `\n${database.engine}: ${TOTAL} notes, ${USER_NOTES} of them for the searching user, ${RUNS} runs each\n`,
  );
  console.log("| query | matches | p50 ms | p99 ms | max ms |");
  console.log("|---|---|---|---|---|");
  for (const [label, query] of cases) {
    const times: number[] = [];
    let total = 0;
    for (let i = 0; i < RUNS; i++) {
      const t = performance.now();
      total = (await store.listNotes(target, query)).total;
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    const at = (q: number) =>
      (times[Math.min(times.length - 1, Math.floor(q * times.length))] as number).toFixed(2);
    console.log(`| ${label} | ${total} | ${at(0.5)} | ${at(0.99)} | ${at(1)} |`);
  }

  console.log("\nQuery plan of a search (count and page):");
  const plan = await explain("zeppelin", target);
  console.log(plan);
} finally {
  await database.close();
  await dropDatabase();
  rmSync(dataDir, { recursive: true, force: true });
}

/** A note to write, and which of its user's notes it is (its seq's offset in their range on SQLite). */
type SeedNote = Omit<NotesDatabase["notes"], "seq"> & { ordinal: number };

async function insertBatch(rows: SeedNote[]): Promise<void> {
  if (database.handles.engine === "sqlite") {
    const { sqlite } = database.handles;
    // The seq of a note lies in its user's range (apps/notes/src/store/migrations.ts, 0004).
    const insert = sqlite.prepare(
      `INSERT INTO notes (seq, id, user_id, title, content, content_text, created_at, updated_at)
       VALUES ((SELECT number << 32 FROM users WHERE id = ?) | ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    sqlite.exec("BEGIN");
    for (const r of rows) {
      insert.run(
        r.user_id,
        r.ordinal,
        r.id,
        r.user_id,
        r.title,
        r.content,
        r.content_text,
        r.created_at,
        r.updated_at,
      );
    }
    sqlite.exec("COMMIT");
    return;
  }
  const column = <K extends keyof SeedNote>(key: K) => rows.map((r) => r[key]);
  await sql`INSERT INTO notes (id, user_id, title, content, content_text, created_at, updated_at)
    SELECT * FROM unnest(${column("id")}::text[], ${column("user_id")}::text[], ${column("title")}::text[],
      ${column("content")}::text[], ${column("content_text")}::text[], ${column("created_at")}::bigint[],
      ${column("updated_at")}::bigint[])`.execute(database.db);
}

async function explain(search: string, userId: string): Promise<string> {
  // The statement of the store's filtered list, as it runs.
  const { page: query } = filteredListQueries(database, userId, { search, limit: 20, offset: 0 });
  const prefix =
    database.engine === "sqlite"
      ? "EXPLAIN QUERY PLAN "
      : "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ";
  const result = await database.db.executeQuery({ ...query, sql: prefix + query.sql });
  return (result.rows as Record<string, unknown>[])
    .map((row) => String(row.detail ?? row["QUERY PLAN"] ?? JSON.stringify(row)))
    .join("\n");
}
