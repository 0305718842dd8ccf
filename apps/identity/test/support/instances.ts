import type { createTestDatabase } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { loadConfig } from "../../src/config.ts";
import { openIdentityService } from "../../src/service.ts";

export type TestDatabase = Awaited<ReturnType<typeof createTestDatabase>>;

/**
 * One AgentPass instance on `database`, answering on `port` for PUBLIC_URL `publicUrl`: several
 * of them on one database and one PUBLIC_URL are one service behind a load balancer.
 */
export async function startInstance(
  database: TestDatabase,
  publicUrl: string,
  port: number,
  env: Record<string, string> = {},
) {
  const loaded = loadConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl,
    LOG_LEVEL: "silent",
    PUBLIC_URL: publicUrl,
    ...env,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const service = await openIdentityService(loaded.config);
  const server = await startServer(service, { port, host: "127.0.0.1" });
  return { service, server, url: `http://127.0.0.1:${port}` };
}
