import { type RunningServer, startServer } from "@agentpass/http";
import { loadConfig } from "../apps/identity/src/config.ts";
import { openIdentityService } from "../apps/identity/src/service.ts";
import { loadNotesConfig } from "../apps/notes/src/config.ts";
import { openNotesService } from "../apps/notes/src/service.ts";
import { ensureNotesPartner } from "./local-partner.ts";

export interface StartedProduct {
  identity: RunningServer;
  notes: RunningServer;
  dataDir: string;
  close(): Promise<void>;
}

/**
 * Starts the identity service and the notes API side by side, the notes API provisioned as a
 * listed partner of the identity service with its own partner key (kept across restarts).
 *
 * Environment: the identity service's variables (PORT 4000, DATA_DIR, DATABASE_URL, …); the
 * notes API takes NOTES_PORT (4001) and NOTES_DATABASE_URL (unset: SQLite in DATA_DIR). DATA_DIR
 * defaults to `data/` at the repository's root whatever the working folder, as the admin command
 * lines do (`DEFAULT_DATA_DIR`, `@agentpass/db`), so they find this database.
 */
export async function startProduct(
  env: Record<string, string | undefined>,
): Promise<StartedProduct> {
  const identityConfig = loadConfig(env);
  if (!identityConfig.ok) throw new Error(identityConfig.error);
  for (const warning of identityConfig.warnings) console.warn(warning);
  const identityService = await openIdentityService(identityConfig.config);
  const identity = await startServer(identityService, {
    port: identityConfig.config.port,
    host: identityConfig.config.host,
    maxConnections: identityConfig.config.maxConnections,
  });
  try {
    const notesPort = env.NOTES_PORT ?? "4001";
    const notesUrl = (env.NOTES_PUBLIC_URL ?? `http://localhost:${notesPort}`).replace(/\/+$/, "");
    const partnerKey = await ensureNotesPartner(
      identityService.ctx,
      identityConfig.config.dataDir,
      notesUrl,
    );
    const notesConfig = loadNotesConfig({
      ...env,
      PORT: notesPort,
      DATABASE_URL: env.NOTES_DATABASE_URL,
      DATABASE_URL_FILE: env.NOTES_DATABASE_URL_FILE,
      PUBLIC_URL: env.NOTES_PUBLIC_URL,
      // AgentPass as clients know it (its PUBLIC_URL, by default http://localhost:<port>): the
      // notes API's protected-resource metadata names this URL, and an OAuth client checks it
      // against the issuer AgentPass's metadata declares.
      AGENTPASS_URL: env.PUBLIC_URL
        ? identityConfig.config.publicUrl
        : identity.url.replace("127.0.0.1", "localhost"),
      AGENTPASS_PARTNER_KEY: partnerKey,
      AGENTPASS_PARTNER_KEY_FILE: undefined,
    });
    if (!notesConfig.ok) throw new Error(notesConfig.error.replace("PORT", "NOTES_PORT"));
    for (const warning of notesConfig.warnings) console.warn(`notes API: ${warning}`);
    const notesService = await openNotesService(notesConfig.config);
    const notes = await startServer(notesService, {
      port: notesConfig.config.port,
      host: notesConfig.config.host,
    });
    return {
      identity,
      notes,
      dataDir: identityConfig.config.dataDir,
      close: async () => {
        await notes.close();
        await identity.close();
      },
    };
  } catch (error) {
    await identity.close();
    throw error;
  }
}

if (import.meta.main) {
  startProduct(process.env).then(
    (product) => {
      console.log(`
AgentPass is running (data in ${product.dataDir}):
  identity service  ${product.identity.url.replace("127.0.0.1", "localhost")}   docs: /docs
  notes API         ${product.notes.url.replace("127.0.0.1", "localhost")}   index: /api, docs: /docs

Next: npm run demo walks the whole flow; the README shows each step by hand.
Stop with Ctrl-C.`);
      const stop = () => {
        product.close().then(() => process.exit(0));
        setTimeout(() => process.exit(1), 10_000).unref();
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    },
    (error: unknown) => {
      console.error(`agentpass: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
