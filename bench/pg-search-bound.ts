/**
 * The most searches a second this machine's PostgreSQL can run, with no service in front: the
 * search statement of `npm run bench` (2,000 matches of `zeppelin` among 100,000 notes, a page
 * of 20 and the total), as the notes store compiles it, run by `pgbench` from 8 clients; then
 * its total alone, and its page alone (what a search would cost with its total known). A p99 of 50 ms at 50 connections needs at least 1,000
 * searches a second (Little's law: 50 in flight for at most 0.05 s each), so a statement the
 * database alone cannot run that often cannot meet it through any service.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node bench/pg-search-bound.ts
 *
 * Runs in a database of its own, created and dropped here. Needs `pgbench` (Debian's
 * postgresql package; on PATH or under /usr/lib/postgresql/<version>/bin).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "@agentpass/db";
import { type CompiledQuery, sql } from "kysely";
import pg from "pg";
import { filteredListQueries } from "../apps/notes/src/store/filtered-list.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { postgresSearchSql } from "../apps/notes/src/store/search-postgres.ts";
import { SEARCH_TERM, seedNotes } from "./seed-notes.ts";

const NOTES = 100_000;
const CLIENTS = 8;
const SECONDS = 8;

const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) throw new Error("set DATABASE_URL to a PostgreSQL role that may create databases");
const name = `agentpass_bench_bound_${randomBytes(4).toString("hex")}`;
const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
const admin = async (statement: string) => {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
};

const folder = mkdtempSync(join(tmpdir(), "agentpass-bench-bound-"));
await admin(`CREATE DATABASE ${name}`);
try {
  await seedNotes({ databaseUrl, dataDir: folder }, "bench@example.com", NOTES);
  const database = openDatabase<NotesDatabase>({
    databaseUrl,
    dataDir: folder,
    fileName: "notes.sqlite",
    deadlineMs: 0,
  });
  try {
    const user = await database.db.selectFrom("users").select("id").executeTakeFirstOrThrow();
    const query = { search: SEARCH_TERM, limit: 20, offset: 0 };
    const { page, count } = filteredListQueries(database, user.id, query);
    const [matches] = postgresSearchSql([SEARCH_TERM]).conditions;
    const pageAlone = sql`SELECT n.* FROM notes n WHERE n.user_id = ${user.id} AND ${matches}
      ORDER BY n.updated_at DESC, n.id LIMIT 20`.compile(database.db);
    console.log(`${NOTES} notes, ${CLIENTS} pgbench clients, ${SECONDS} s each, no service:`);
    for (const [label, statement] of [
      ["the search (page and total)", page],
      ["its total alone", count()],
      ["its page alone (no total)", pageAlone],
    ] as const) {
      console.log(`  ${label}: ${pgbench(statement)} statements a second`);
    }
  } finally {
    await database.close();
  }
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  rmSync(folder, { recursive: true, force: true });
}

/** `statement` with its parameters written in (pgbench runs plain SQL), run by pgbench: its tps. */
function pgbench(statement: CompiledQuery): string {
  const text = statement.sql.replace(/\$(\d+)/g, (_, index: string) =>
    literal(statement.parameters[Number(index) - 1]),
  );
  const file = join(folder, "statement.sql");
  // As it is: a newline inside a literal is part of the indexed expression (search-postgres.ts).
  writeFileSync(file, `${text};\n`);
  const args = ["-n", "-c", `${CLIENTS}`, "-j", "2", "-T", `${SECONDS}`, "-f", file, databaseUrl];
  const output = execFileSync(pgbenchPath(), args, { encoding: "utf8" });
  return output.match(/^tps = ([\d.]+)/m)?.[1]?.replace(/\..*/, "") ?? `? (${output})`;
}

function literal(value: unknown): string {
  if (typeof value === "number") return String(value);
  return `'${String(value).replace(/'/g, "''")}'`;
}

function pgbenchPath(): string {
  const root = "/usr/lib/postgresql";
  const installed = existsSync(root)
    ? readdirSync(root)
        .map((version) => join(root, version, "bin", "pgbench"))
        .filter(existsSync)
    : [];
  return installed.at(-1) ?? "pgbench";
}
