/**
 * The most times a second this machine's PostgreSQL runs a statement with no service in front:
 * `runPgbench` runs it with `pgbench`, which is how `npm run bench` measures the bound of its
 * search on PostgreSQL (search-bound.ts). Run alone, this file seeds a database of its own
 * (created and dropped here) with the bench's 100,000 notes and prints the bench's search
 * statement, as the notes store compiles it, then its total alone and its page alone (what a
 * search would cost with its total known):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/pg-search-bound.ts
 *
 * Needs `pgbench` (on Debian, in the server's package, postgresql-<version>; on PATH or under
 * /usr/lib/postgresql/<version>/bin).
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { openDatabase } from "@agentpass/db";
import { type CompiledQuery, sql } from "kysely";
import pg from "pg";
import { filteredListQueries } from "../apps/notes/src/store/filtered-list.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { postgresSearchSql } from "../apps/notes/src/store/search-postgres.ts";
import { latencySummary, type Measurement } from "./measure.ts";
import { SEARCH_TERM, seedNotes } from "./seed-notes.ts";

/** The path of a pgbench that runs, or undefined when none is installed. */
export function findPgbench(): string | undefined {
  const root = "/usr/lib/postgresql";
  const installed = existsSync(root)
    ? readdirSync(root)
        .map((version) => join(root, version, "bin", "pgbench"))
        .filter(existsSync)
    : [];
  // Debian's /usr/bin/pgbench is a wrapper that is there without the server's package: asked
  // for its version, it fails.
  return [...installed.reverse(), "pgbench"].find((candidate) => {
    try {
      execFileSync(candidate, ["--version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Runs `statement` from `clients` pgbench connections for `seconds` at `databaseUrl`: its rate,
 * and each statement's latency from pgbench's own log (in ms, to 0.1). It is sent as the service
 * sends it, with its parameters bound (`-M extended`), not written into its text. `folder` holds
 * the script and the logs.
 */
export async function runPgbench(
  pgbench: string,
  databaseUrl: string,
  statement: CompiledQuery,
  options: { clients: number; seconds: number; folder: string },
): Promise<Measurement> {
  const { clients, seconds, folder } = options;
  const script = join(folder, "statement.sql");
  const logs = mkdtempSync(join(folder, "pgbench-log-"));
  // pgbench binds `:name` variables as $1, $2… in the order they appear; `::` casts are no
  // variables to it.
  writeFileSync(script, `${statement.sql.replace(/\$(\d+)/g, ":p$1")};\n`);
  const variables = statement.parameters.flatMap((value, index) => [
    "-D",
    `p${index + 1}=${String(value)}`,
  ]);
  const args = [
    ...["-n", "-M", "extended", "-c", `${clients}`, "-j", `${Math.min(clients, 2)}`],
    ...["-T", `${seconds}`, "-l", `--log-prefix=${join(logs, "log")}`, "-f", script],
    ...variables,
    databaseUrl,
  ];
  try {
    const { stdout } = await promisify(execFile)(pgbench, args, { encoding: "utf8" });
    const figure = (pattern: RegExp) => Number(stdout.match(pattern)?.[1] ?? Number.NaN);
    // Each line of pgbench's log is one statement; its third field, the time it took in µs.
    const latencies = readdirSync(logs)
      .flatMap((file) => readFileSync(join(logs, file), "utf8").split("\n"))
      .map((line) => Number(line.split(" ")[2]) / 1000)
      .filter(Number.isFinite);
    return {
      requestsPerSecond: figure(/^tps = ([\d.]+)/m),
      ...latencySummary(latencies),
      peakRssMb: 0,
      requests: figure(/^number of transactions actually processed: (\d+)/m),
      errors: figure(/^number of failed transactions: (\d+)/m) || 0,
    };
  } finally {
    rmSync(logs, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const NOTES = 100_000;
  const CLIENTS = 8;
  const SECONDS = 8;
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) throw new Error("set DATABASE_URL to a PostgreSQL role that may create databases");
  const pgbench = findPgbench();
  if (!pgbench) throw new Error("pgbench is not installed (Debian: postgresql-<version>)");
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
    const userId = await seedNotes({ databaseUrl, dataDir: folder }, "bench@example.com", NOTES);
    const database = openDatabase<NotesDatabase>({
      databaseUrl,
      dataDir: folder,
      fileName: "notes.sqlite",
      deadlineMs: 0,
    });
    try {
      const query = { search: SEARCH_TERM, limit: 20, offset: 0 };
      const { page, count } = filteredListQueries(database, userId, query);
      const [matches] = postgresSearchSql([SEARCH_TERM]).conditions;
      const pageAlone = sql`SELECT n.* FROM notes n WHERE n.user_id = ${userId} AND ${matches}
        ORDER BY n.updated_at DESC, n.id LIMIT 20`.compile(database.db);
      console.log(`${NOTES} notes, ${CLIENTS} pgbench clients, ${SECONDS} s each, no service:`);
      for (const [label, statement] of [
        ["the search (page and total)", page],
        ["its total alone", count()],
        ["its page alone (no total)", pageAlone],
      ] as const) {
        const measured = await runPgbench(pgbench, databaseUrl, statement, {
          clients: CLIENTS,
          seconds: SECONDS,
          folder,
        });
        console.log(
          `  ${label}: ${Math.round(measured.requestsPerSecond)} statements a second, p50 ${measured.p50} ms, p99 ${measured.p99} ms`,
        );
      }
    } finally {
      await database.close();
    }
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(folder, { recursive: true, force: true });
  }
}
