import { createTestDatabase, type Engine } from "@agentpass/db/testing";
import { startTestIdentityService } from "@agentpass/identity/testing";
import pino from "pino";
import { loadNotesConfig } from "../../src/config.ts";
import { openNotesDatabase, openNotesService } from "../../src/service.ts";

export const START = Date.UTC(2026, 10, 23, 12);

/**
 * The notes API on `engine` with its own database, talking over real HTTP to a real identity
 * service. One movable clock drives both, so token expiry and `updatedAt` are exact. `notesEnv`
 * adds to the notes API's configuration (`loadNotesConfig`).
 */
export async function openTestNotes(
  engine: Engine,
  identityEnv: Record<string, string> = {},
  notesEnv: Record<string, string> = {},
) {
  let now = START;
  const clock = () => now;
  // An identity service whose PUBLIC_URL is given listens where that URL says (an OAuth issuer).
  const publicPort = identityEnv.PUBLIC_URL ? Number(new URL(identityEnv.PUBLIC_URL).port) : 0;
  const identity = await startTestIdentityService({ clock, env: identityEnv, port: publicPort });
  const partner = await identity.createPartner({
    name: "Notes",
    ownerEmail: "notes-operator@example.com",
  });
  const partnerKey = await identity.createPartnerKey(partner.id);
  const database = await createTestDatabase(engine);
  const loaded = loadNotesConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl,
    AGENTPASS_URL: identity.url,
    AGENTPASS_PARTNER_KEY: partnerKey.key,
    ...notesEnv,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  // The service builds its own verifier from the configuration, on the test's clock.
  const service = await openNotesService(loaded.config, {
    clock,
    logger: pino({ level: "silent" }),
  });
  // The store hands out no query builder: a test that reads or changes rows directly opens the
  // database again, as another process would.
  const direct = openNotesDatabase(loaded.config, { readerThreads: 0 });
  const others: Awaited<ReturnType<typeof openNotesService>>[] = [];

  const notes = {
    /** Requests over a real loopback socket, through the service's own listener. */
    app: { request: service.request },
    service,
    /** Where the service's database is, for another process (the admin CLI) to open it. */
    database: { dataDir: database.dataDir, databaseUrl: database.databaseUrl },
    store: service.ctx.store,
    /** The whole query builder over the service's database, on connections of its own. */
    db: direct.db,
    identity,
    partner: { id: partner.id, keyId: partnerKey.id, key: partnerKey.key },
    now: clock,
    advance(ms: number) {
      now += ms;
    },
    /**
     * Mints a session token for `userKey` through the identity service's HTTP API, bound to the
     * partner `audience` when given (the notes API's own id is `notes.partner.id`).
     */
    async mint(userKey: string, audience?: string): Promise<string> {
      const response = await fetch(`${identity.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
        ...(audience !== undefined && { body: JSON.stringify({ audience }) }),
      });
      return ((await response.json()) as { sessionToken: string }).sessionToken;
    },
    /** A person with an AgentPass key and (unless `local` is false) a notes account. */
    async person(email = `p-${crypto.randomUUID()}@example.com`, local = true) {
      const { key, id: keyId } = await identity.createUserKey(email);
      if (local) await service.ctx.store.addUser(email.toLowerCase(), now);
      const token = await notes.mint(key);
      return {
        email,
        key,
        keyId,
        token,
        call: (method: string, path: string, body?: unknown, raw?: string) =>
          notes.call(token, method, path, body, raw),
      };
    },
    /** One request to the notes API with a session token (or none when `token` is null). */
    call(token: string | null, method: string, path: string, body?: unknown, raw?: string) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (token !== null) headers["x-session-token"] = token;
      return notes.app.request(path, {
        method,
        headers,
        body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
    },
    /** A second instance of the notes API on the same database and AgentPass, as a deploy runs. */
    async another() {
      const twin = await openNotesService(loaded.config, {
        clock,
        logger: pino({ level: "silent" }),
      });
      others.push(twin);
      return { request: twin.request };
    },
    async close() {
      for (const twin of others) await twin.close();
      await direct.close();
      await service.close();
      await identity.close();
      await database.drop();
    },
  };
  return notes;
}

export type TestNotes = Awaited<ReturnType<typeof openTestNotes>>;
export type Person = Awaited<ReturnType<TestNotes["person"]>>;
