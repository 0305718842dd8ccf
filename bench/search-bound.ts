import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type OpenedDatabase, openDatabase } from "@agentpass/db";
import type { CompiledQuery } from "kysely";
import { loadNotesConfig } from "../apps/notes/src/config.ts";
import { NOTES_CACHE_MB } from "../apps/notes/src/service.ts";
import { filteredListQueries } from "../apps/notes/src/store/filtered-list.ts";
import type { NotesDatabase } from "../apps/notes/src/store/schema.ts";
import { createSearchReader } from "../apps/notes/src/store/search-reader.ts";
import type { ListQuery } from "../apps/notes/src/store/types.ts";
import { latencySummary, type Measurement } from "./measure.ts";
import { findPgbench, runPgbench } from "./pg-search-bound.ts";
import { SEARCH_TERM } from "./seed-notes.ts";

/** The bench's search (`notes-search`): a first page of 20 of the notes holding `SEARCH_TERM`. */
export const BENCH_SEARCH: ListQuery = { search: SEARCH_TERM, limit: 20, offset: 0 };

/**
 * PostgreSQL connections the notes API keeps from its searches, of its pool (`RESERVED_CONNECTIONS`
 * in packages/db/src/budgeted-read.ts, which does not export it): searches run on at most the
 * pool's size minus these at once.
 */
const RESERVED_CONNECTIONS = 2;

export interface SearchBound {
  /** Its row in the table. */
  name: string;
  /** The statement run for `duration` s, `connections` at a time as the engine allows. */
  measure(options: { duration: number; connections: number }): Promise<Measurement>;
  close(): Promise<void>;
}

/**
 * The bound of the bench's search: the statement the notes API runs for `BENCH_SEARCH`, built by
 * the store's own `filteredListQueries`, run on the notes API's database with no HTTP in front,
 * as many at once as the service runs them, so the service's search rate is judged against what
 * its database does on this machine in the same minute (the target is a share of it), not
 * against a time. `env` is the notes API's environment, read as the service reads it.
 * - SQLite: the statement through the service's own search reader (`createSearchReader`) on as
 *   many reader threads as the service has (`READER_THREADS`), `connections` reads in flight.
 * - PostgreSQL: run by `pgbench` (pg-search-bound.ts) from as many connections as the service
 *   runs searches on (its pool's size minus those it keeps for other requests). Without pgbench
 *   it says so and gives undefined: the bound is not measured.
 */
export async function openSearchBound(
  env: Record<string, string>,
  userId: string,
): Promise<SearchBound | undefined> {
  const loaded = loadNotesConfig({ ...process.env, ...env });
  if (!loaded.ok) throw new Error(`the notes API's configuration: ${loaded.error}`);
  const { config } = loaded;
  const location = { dataDir: config.dataDir, fileName: "notes.sqlite" };
  if (config.databaseUrl) {
    const { databaseUrl } = config;
    const pgbench = findPgbench();
    if (!pgbench) {
      console.error(
        "bench: pgbench is not installed (Debian: postgresql-<version>): the search's bound is not measured",
      );
      return undefined;
    }
    const database = openDatabase<NotesDatabase>({ ...location, databaseUrl, deadlineMs: 0 });
    const statement = filteredListQueries(database, userId, BENCH_SEARCH).page;
    try {
      await checkFindsNotes(database, statement);
    } finally {
      await database.close();
    }
    const clients = Math.max(1, config.databasePool.size - RESERVED_CONNECTIONS);
    const folder = mkdtempSync(join(tmpdir(), "agentpass-bench-pgbench-"));
    return {
      name: `search bound: the statement alone, pgbench on ${clients} connections`,
      measure: ({ duration }) =>
        runPgbench(pgbench, databaseUrl, statement, {
          clients,
          seconds: Math.max(1, Math.round(duration)),
          folder,
        }),
      close: async () => rmSync(folder, { recursive: true, force: true }),
    };
  }
  const database = openDatabase<NotesDatabase>({
    ...location,
    cacheMb: NOTES_CACHE_MB,
    readerThreads: config.readerThreads,
  });
  const read = createSearchReader(database, config.limits.searchTimeoutMs);
  const statement = filteredListQueries(database, userId, BENCH_SEARCH).page;
  await checkFindsNotes(database, statement);
  return {
    name: `search bound: the statement alone, ${config.readerThreads} reader threads`,
    measure: (options) => measureReads(() => read(statement), options),
    close: () => database.close(),
  };
}

/**
 * Throws unless `statement` finds notes: a bound for a search that finds nothing (another user's,
 * say) would be fast, and wrong.
 */
async function checkFindsNotes(
  database: OpenedDatabase<NotesDatabase>,
  statement: CompiledQuery,
): Promise<void> {
  const { rows } = await database.db.executeQuery(statement);
  if (rows.length === 0) throw new Error("the search's bound: its statement finds no notes");
}

/**
 * Runs `read` for `duration` s, `connections` at a time (each starts its next as its last ends,
 * as autocannon's connections do): the rate of those ended within the time, and their latencies.
 * A read that fails is an error.
 */
async function measureReads(
  read: () => Promise<unknown>,
  options: { duration: number; connections: number },
): Promise<Measurement> {
  const end = performance.now() + options.duration * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const connection = async () => {
    while (performance.now() < end) {
      const start = performance.now();
      try {
        await read();
        const ended = performance.now();
        if (ended <= end) latencies.push(ended - start);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, connection));
  return {
    requestsPerSecond: latencies.length / options.duration,
    ...latencySummary(latencies),
    peakRssMb: 0,
    requests: latencies.length + errors,
    errors,
  };
}
