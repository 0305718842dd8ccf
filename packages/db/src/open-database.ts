import { chmodSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  Kysely,
  type Migration,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type Transaction,
} from "kysely";
import type pg from "pg";
import { createSqliteChangeDetector } from "./change-detector.ts";
import { ensureDataDir } from "./data-dir.ts";
import { type MigrationReport, migrateToLatest, readMigrations } from "./migrate.ts";
import { createReaderPool, type ReaderPool } from "./reader-pool.ts";
import { createNodeSqliteDialect } from "./sqlite-dialect.ts";
import { inStatementSpan } from "./statement-spans.ts";

export type Engine = "sqlite" | "postgres";

/**
 * How the PostgreSQL server at `databaseUrl` hands out its connections. `session`: each
 * connection is a server session of its own (PostgreSQL itself, or PgBouncer in session mode).
 * `transaction`: a pooler in front (PgBouncer in `pool_mode = transaction`) gives each
 * transaction whichever server session is free, so nothing may outlive a transaction: no named
 * prepared statements, no settings sent at connect (PgBouncer refuses `statement_timeout` as a
 * startup parameter: set it on the role instead, docs/scale.md), no session locks.
 */
export type PoolMode = "session" | "transaction";

export interface OpenDatabaseOptions {
  /** A `postgres://` URL selects PostgreSQL; anything else (or nothing) selects SQLite. */
  databaseUrl?: string | undefined;
  /** Folder of the SQLite file; created when missing. */
  dataDir: string;
  /** SQLite file name inside `dataDir`, such as `identity.sqlite`. */
  fileName: string;
  /**
   * PostgreSQL pool size: the connections this process opens at most for its reads, writes and
   * transactions. Default 10.
   */
  poolSize?: number;
  /** PostgreSQL: what the server at `databaseUrl` is (`PoolMode`). Default `session`. */
  poolMode?: PoolMode;
  /**
   * PostgreSQL: how long a request may wait for a connection, and a statement may run, before it
   * fails as unavailable (503), in ms. Default `DEFAULT_DEADLINE_MS`; 0 for none (migrations).
   */
  deadlineMs?: number;
  /** SQLite's page cache, in MiB; SQLite's default is 2. */
  cacheMb?: number;
  /**
   * SQLite only: how many threads may run reads given to `readers` (`createRowsReader`), each
   * with its own connection. 0 (the default) runs them on the service's own connection.
   */
  readerThreads?: number;
}

/**
 * The query builder without its write statements: what a store reads through, so that its writes
 * can only go through `write`. Raw `sql` runs on it too, for reads.
 */
export type ReadOnlyDb<T> = Pick<Kysely<T>, "selectFrom" | "fn" | "dynamic" | "getExecutor">;

/** Runs `work` as a write (`OpenedDatabase.write`). */
export type Write<T> = <R>(work: (db: Kysely<T>) => Promise<R>) => Promise<R>;

/** Runs `work` as a write in one transaction (`OpenedDatabase.transaction`). */
export type WriteTransaction<T> = <R>(work: (trx: Transaction<T>) => Promise<R>) => Promise<R>;

/** SQLite's connections. Never written through: see `OpenedDatabase.write`. */
export interface SqliteHandles {
  engine: "sqlite";
  /** The service's own connection. */
  sqlite: DatabaseSync;
  /** With `readerThreads` only: the threads that run long reads off the service's own. */
  readers?: ReaderPool;
}

/** PostgreSQL's connections. */
export interface PostgresHandles {
  engine: "postgres";
  pool: pg.Pool;
  /** How the server hands out connections; prepared reads follow it. */
  poolMode: PoolMode;
  /**
   * In `session` mode only: a pool of `size` connections of its own whose every statement stops
   * at `statementTimeoutMs`, set once when each connection opens, so a statement with a budget of
   * its own is one round trip (no `BEGIN; SET LOCAL …; COMMIT`). Closed with the database.
   * Behind a transaction pooler, which refuses settings sent at connect: undefined.
   */
  openBudgetedPool(settings: { size: number; statementTimeoutMs: number }): pg.Pool | undefined;
}

export type EngineHandles = SqliteHandles | PostgresHandles;

export interface OpenedDatabase<T> {
  /**
   * The query builder, for reads (a store holds it as a `ReadOnlyDb`). The service's writes go
   * through `write`: a write made on `db` directly is not counted by `hasChanged` in this
   * process, so a cache of this process would keep what it replaced. Tools and tests that seed a
   * database before anything reads it may write here.
   */
  db: Kysely<T>;
  engine: Engine;
  /**
   * The one way to write: runs `work`, each of whose statements commits on its own, and counts
   * it as a write of this process from before it starts until after it ends, failed or not
   * (SQLite: `hasChanged` sees it). `transaction` for statements that commit together.
   */
  write: Write<T>;
  /** `write` of `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction: WriteTransaction<T>;
  /**
   * The engine's own connections, for the functions of this package that run statements
   * without the query builder (`createPreparedQuery`, `createRowsReader`,
   * `createBudgetedReader`): what a store needs of them is there, never the handles.
   */
  handles: EngineHandles;
  /**
   * SQLite only: whether anything may have changed since the last call: a commit by another
   * connection or process, or a `write` of this process. Undefined on PostgreSQL, where other
   * instances write without telling.
   */
  hasChanged?: () => boolean;
  /**
   * Applies `migrations` (see `migrateToLatest`). On PostgreSQL they run on a connection of
   * their own, without the requests' deadline: rebuilding an index may take minutes.
   */
  migrate(service: string, migrations: Record<string, Migration>): Promise<MigrationReport>;
  /** Where the database stands against `migrations`, without changing anything. */
  readMigrations(service: string, migrations: Record<string, Migration>): Promise<MigrationReport>;
  close(): Promise<void>;
}

/** How long a request may wait on PostgreSQL, for a connection or for one statement. */
const DEFAULT_DEADLINE_MS = 2000;
/**
 * The client-side backstop past the server's `statement_timeout`: a server that answers cancels
 * the statement itself and keeps the connection; one that does not answer at all (stopped, or a
 * network that drops packets) is given up on here, and its connection thrown away.
 */
const UNANSWERED_GRACE_MS = 500;

/** How long a SQLite statement waits for a lock another connection holds. */
const BUSY_TIMEOUT_MS = 5000;

export function isPostgresUrl(url: string | undefined): url is string {
  return url !== undefined && /^postgres(ql)?:\/\//.test(url);
}

/** Opens the service's database: PostgreSQL when `databaseUrl` says so, else SQLite in WAL mode. */
export function openDatabase<T>(options: OpenDatabaseOptions): OpenedDatabase<T> {
  if (isPostgresUrl(options.databaseUrl)) return openPostgres<T>(options.databaseUrl, options);
  const dataDir = ensureDataDir(options.dataDir);
  if (!dataDir.ok) throw new Error(dataDir.error);
  const file = join(options.dataDir, options.fileName);
  const sqlite = new DatabaseSync(file, { timeout: BUSY_TIMEOUT_MS });
  // The file holds hashes and wrapped keys: only the service's own user reads it.
  chmodSync(file, 0o600);
  // WAL lets the admin CLI write while the server reads; NORMAL sync in WAL mode is durable
  // across process crashes (only an OS crash can lose the last transactions). SQLite's own
  // automatic checkpoint (at 1,000 pages, its default, never turned off) keeps the WAL bounded.
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  if (options.cacheMb) sqlite.exec(`PRAGMA cache_size = -${Math.trunc(options.cacheMb * 1024)}`);
  const db = new Kysely<T>({ dialect: createNodeSqliteDialect(sqlite) });
  const { writes, write, transaction } = createWriter(db);
  const hasChanged = createSqliteChangeDetector(sqlite, writes);
  const threads = options.readerThreads ?? 0;
  const readers =
    threads > 0
      ? createReaderPool({ file, threads, cacheMb: options.cacheMb, timeoutMs: BUSY_TIMEOUT_MS })
      : undefined;
  async function close() {
    await readers?.close();
    await db.destroy();
  }
  const migrate = (service: string, migrations: Record<string, Migration>) =>
    write((db) => migrateToLatest(db, service, migrations));
  const readMigrationsOf = (service: string, migrations: Record<string, Migration>) =>
    readMigrations(db, service, migrations);
  return {
    db,
    engine: "sqlite",
    write,
    transaction,
    handles: { engine: "sqlite", sqlite, readers },
    hasChanged,
    migrate,
    readMigrations: readMigrationsOf,
    close,
  };
}

/**
 * `write` and `transaction` over `db`, and the count of this process's writes they keep: one
 * when a write starts and one when it ends, so a change check made while it runs sees a change,
 * and so does the first check after it.
 */
function createWriter<T>(db: Kysely<T>) {
  const writes = { count: 0 };
  const write: Write<T> = async (work) => {
    writes.count++;
    try {
      return await work(db);
    } finally {
      writes.count++;
    }
  };
  const transaction: WriteTransaction<T> = (work) => write((db) => db.transaction().execute(work));
  return { writes, write, transaction };
}

// bigint columns hold epoch milliseconds, well inside Number's exact range.
const INT8_OID = 20;

/**
 * node-postgres, loaded only when a PostgreSQL URL is given: a service on SQLite never pays for
 * it (its code is ~10 MB of the process's memory).
 */
function loadPg(): typeof pg {
  return createRequire(import.meta.url)("pg") as typeof pg;
}

function openPostgres<T>(url: string, options: OpenDatabaseOptions): OpenedDatabase<T> {
  const pg = loadPg();
  const types = {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      oid === INT8_OID
        ? Number
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  const poolMode = options.poolMode ?? "session";
  const connection: pg.ClientConfig = {
    connectionString: url,
    types,
    // Every request has a deadline: a database that hangs must not hang requests, it answers 503.
    connectionTimeoutMillis: deadlineMs,
    ...(deadlineMs > 0 && {
      // Sent at connect, which a transaction pooler refuses: there the role's own
      // statement_timeout is the server's deadline, and this backstop the client's.
      ...(poolMode === "session" && { statement_timeout: deadlineMs }),
      query_timeout: deadlineMs + UNANSWERED_GRACE_MS,
    }),
    keepAlive: true,
  };
  const pool = openPool(pg, { ...connection, max: options.poolSize ?? 10 });
  const budgetedPools: pg.Pool[] = [];
  const openBudgetedPool = ({
    size,
    statementTimeoutMs,
  }: {
    size: number;
    statementTimeoutMs: number;
  }) => {
    if (poolMode !== "session") return undefined;
    const budgeted = openPool(pg, {
      ...connection,
      max: size,
      statement_timeout: statementTimeoutMs,
      // The server cancels a statement at its budget and answers; the backstop for one that
      // never answers stays the requests' own (a loaded server may answer a cancel late).
      query_timeout: Math.max(statementTimeoutMs, deadlineMs) + UNANSWERED_GRACE_MS,
    });
    budgetedPools.push(budgeted);
    return budgeted;
  };
  const db = new Kysely<T>({ dialect: new PostgresDialect({ pool: discardUnanswered(pool) }) });
  const { write, transaction } = createWriter(db);
  async function migrate(service: string, migrations: Record<string, Migration>) {
    const unbounded = openPostgres<unknown>(url, { ...options, poolSize: 1, deadlineMs: 0 });
    try {
      return await unbounded.write((db) => migrateToLatest(db, service, migrations));
    } finally {
      await unbounded.close();
    }
  }
  return {
    db,
    engine: "postgres",
    write,
    transaction,
    handles: { engine: "postgres", pool, poolMode, openBudgetedPool },
    migrate,
    readMigrations: (service, migrations) => readMigrations(db, service, migrations),
    async close() {
      await Promise.all(budgetedPools.map((budgeted) => budgeted.end()));
      await db.destroy();
    },
  };
}

/**
 * A pool of `config`. A client losing its connection (server restart) must not crash the
 * process: an idle one is reported on the pool, a checked-out one on itself, where nobody listens
 * by default. Its query is failed all the same, so the request that ran it still learns.
 */
function openPool(driver: typeof pg, config: pg.PoolConfig): pg.Pool {
  const pool = new driver.Pool(config);
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

/**
 * The pool as Kysely sees it, except that a connection whose query went unanswered past its
 * deadline is thrown away on release instead of going back to the pool, where the next request
 * would queue behind the lost answer. (`pool.query`, used by prepared reads, does this itself.)
 */
function discardUnanswered(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let unanswered: Error | undefined;
      return {
        // Kysely's string form only: no query here streams through a cursor.
        query: ((sql: string, parameters: ReadonlyArray<unknown>) =>
          inStatementSpan("postgresql", sql, () => {
            const result = client.query(sql, [...parameters]);
            result.catch((error: Error) => {
              if (isUnansweredQuery(error)) unanswered = error;
            });
            return result;
          })) as unknown as PostgresPoolClient["query"],
        release: () => client.release(unanswered),
      };
    },
    end: () => pool.end(),
  };
}

function isUnansweredQuery(error: unknown): boolean {
  return error instanceof Error && error.message === "Query read timeout";
}
