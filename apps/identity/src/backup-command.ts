import { backupDatabase } from "@agentpass/db";
import type { CommandAnswer } from "./command-answer.ts";
import type { Config } from "./config.ts";
import { openIdentityDatabase } from "./service.ts";

/**
 * `agentpass-server backup <file>`: a consistent copy of the service's SQLite database, taken
 * while it runs (`backupDatabase`); the path written is the answer. The copy holds no secret: a
 * restore needs the same AGENTPASS_SECRET (docs/operations.md, "Backups and restores").
 */
export async function runBackupCommand(config: Config, file: string): Promise<CommandAnswer> {
  const database = openIdentityDatabase(config);
  try {
    return { ok: true, output: (await backupDatabase(database, file)).file };
  } catch (error) {
    return { ok: false, error: `Cannot back up: ${(error as Error).message}` };
  } finally {
    await database.close();
  }
}
