import { type Kysely, type Migration, Migrator } from "kysely";

/**
 * Applies forward-only migrations, in name order, at start-up. Already-applied migrations are
 * skipped, so running it again (or from several processes at once) is harmless. Each service
 * keeps its own bookkeeping tables (`<service>_migrations`), so two services can never mistake
 * each other's migrations even if pointed at one database by mistake.
 */
export async function migrateToLatest(
  // biome-ignore lint/suspicious/noExplicitAny: migrations run before the typed schema exists.
  db: Kysely<any>,
  service: string,
  migrations: Record<string, Migration>,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: `${service}_migrations`,
    migrationLockTableName: `${service}_migrations_lock`,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === "Error")?.migrationName;
    throw new Error(`Database migration ${failed ?? ""} failed: ${String(error)}`, {
      cause: error,
    });
  }
}
