import type { Migration } from "kysely";
import type { MigrationReport } from "./migrate.ts";
import type { OpenedDatabase } from "./open-database.ts";

/** The `code` of the error `prepareSchema` refuses a database with (`isSchemaBehind`). */
const SCHEMA_BEHIND = "SCHEMA_BEHIND";

export interface PrepareSchemaOptions {
  /**
   * true: apply the migrations the database lacks (a service's start by default). false: apply
   * nothing, and refuse a database that lacks any (admin commands, and services started with
   * `MIGRATE_ON_START=false` after a deploy's migrate step).
   */
  migrate: boolean;
  /** The command that migrates, named in the refusal, such as `agentpass-server migrate`. */
  migrateCommand: string;
  /** Told once of migrations the database has and this release does not know (a newer one's). */
  onUnknown(names: string[]): void;
}

/**
 * Brings a service's database to this release's schema, or checks that it is there, at start.
 * A database migrated by a newer release is run beside, not refused: migrations only add, so the
 * release before them keeps working during a rolling deploy (docs/scale.md, "Deploys").
 */
export async function prepareSchema(
  database: Pick<OpenedDatabase<unknown>, "migrate" | "readMigrations">,
  service: string,
  migrations: Record<string, Migration>,
  options: PrepareSchemaOptions,
): Promise<MigrationReport> {
  const report = options.migrate
    ? await database.migrate(service, migrations)
    : await database.readMigrations(service, migrations);
  if (report.pending.length > 0) {
    const missing = report.pending.length === 1 ? "migration" : "migrations";
    throw Object.assign(
      new Error(
        `The database schema is behind this release (missing ${missing} ${report.pending.join(", ")}): run \`${options.migrateCommand}\` first`,
      ),
      { code: SCHEMA_BEHIND },
    );
  }
  if (report.unknown.length > 0) options.onUnknown(report.unknown);
  return report;
}

/** Whether `error` is `prepareSchema`'s refusal of a database that lacks migrations. */
export function isSchemaBehind(error: unknown): error is Error {
  return error instanceof Error && (error as { code?: unknown }).code === SCHEMA_BEHIND;
}
