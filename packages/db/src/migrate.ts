import { type Kysely, type Migration, PostgresAdapter, sql } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: migrations run before the typed schema exists.
type AnyDb = Kysely<any>;

/** Where a database stands against the migrations of this release. */
export interface MigrationReport {
  /** Applied by this call, in name order (none when only read). */
  applied: string[];
  /** Migrations of this release the database still lacks (none once migrated). */
  pending: string[];
  /**
   * Migrations the database has that this release does not know: applied by a newer release.
   * Migrations only ever add (docs/scale.md, "Deploys"), so this release runs beside them.
   */
  unknown: string[];
}

/**
 * The advisory lock migrations take on PostgreSQL. It is the one Kysely's own migrator takes
 * (as a session lock), which releases before this one used: the two exclude each other, so a
 * rolling deploy that starts an older release during a migration cannot interleave them.
 */
const MIGRATION_LOCK = "3853314791062309107";

/**
 * Applies forward-only migrations, in name order, in one transaction: all of them or none.
 * Already-applied migrations are skipped (read again under the lock), so running it again, or
 * from several processes at once, is harmless; migrations the database has and this release does not know (a newer
 * release's) are left alone and reported. Each service keeps its own bookkeeping table
 * (`<service>_migrations`, the shape Kysely's migrator keeps, so databases migrated by earlier
 * releases carry on), so two services never mistake each other's migrations.
 *
 * On PostgreSQL the lock is `pg_advisory_xact_lock` inside the transaction, never a session
 * lock, so migrating works through PgBouncer in transaction mode; on SQLite, `BEGIN IMMEDIATE`
 * takes the database's one write lock first.
 */
export async function migrateToLatest(
  db: AnyDb,
  service: string,
  migrations: Record<string, Migration>,
): Promise<MigrationReport> {
  // Read first, without a lock: instances starting on a migrated database take none. (On
  // SQLite a lock held across awaits makes another connection of this thread wait with the
  // thread blocked, so none is taken when there is nothing to do.)
  const found = await readMigrations(db, service, migrations);
  if (found.pending.length === 0) return found;
  const table = migrationTable(service);
  const postgres = isPostgres(db);
  return db.connection().execute(async (connection) => {
    await sql.raw(postgres ? "BEGIN" : "BEGIN IMMEDIATE").execute(connection);
    try {
      if (postgres) {
        await sql`SELECT pg_advisory_xact_lock(${sql.raw(MIGRATION_LOCK)})`.execute(connection);
        // An index build may take minutes: never cut by a statement_timeout set on the role.
        await sql`SET LOCAL statement_timeout = 0`.execute(connection);
      }
      await sql`CREATE TABLE IF NOT EXISTS ${sql.table(table)} (
        name varchar(255) NOT NULL PRIMARY KEY,
        timestamp varchar(255) NOT NULL
      )`.execute(connection);
      const report = compare(migrations, await appliedNames(connection, table));
      for (const name of report.pending) {
        try {
          await (migrations[name] as Migration).up(connection);
        } catch (error) {
          throw new Error(`Database migration ${name} failed: ${String(error)}`, { cause: error });
        }
        await sql`INSERT INTO ${sql.table(table)} (name, timestamp)
          VALUES (${name}, ${new Date().toISOString()})`.execute(connection);
      }
      await sql`COMMIT`.execute(connection);
      return { applied: report.pending, pending: [], unknown: report.unknown };
    } catch (error) {
      await sql`ROLLBACK`.execute(connection).catch(() => {});
      throw error;
    }
  });
}

/** Where the database stands against `migrations`, read only: nothing is created or applied. */
export async function readMigrations(
  db: AnyDb,
  service: string,
  migrations: Record<string, Migration>,
): Promise<MigrationReport> {
  const table = migrationTable(service);
  const tables = await db.introspection.getTables();
  const applied = tables.some((found) => found.name === table)
    ? await appliedNames(db, table)
    : new Set<string>();
  return compare(migrations, applied);
}

function migrationTable(service: string): string {
  return `${service}_migrations`;
}

function isPostgres(db: AnyDb): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

async function appliedNames(db: AnyDb, table: string): Promise<Set<string>> {
  const rows = await sql<{ name: string }>`SELECT name FROM ${sql.table(table)}`.execute(db);
  return new Set(rows.rows.map((row) => row.name));
}

function compare(migrations: Record<string, Migration>, applied: Set<string>): MigrationReport {
  const known = Object.keys(migrations).sort();
  return {
    applied: [],
    pending: known.filter((name) => !applied.has(name)),
    unknown: [...applied].filter((name) => !(name in migrations)).sort(),
  };
}
