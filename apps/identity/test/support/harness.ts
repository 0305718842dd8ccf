import { createTestDatabase, type Engine } from "@agentpass/db/testing";
import { loadConfig } from "../../src/config.ts";
import { createAccount } from "../../src/domain/accounts.ts";
import { issueKey } from "../../src/domain/credentials.ts";
import { createPartner } from "../../src/domain/partners.ts";
import { openIdentityService } from "../../src/service.ts";

export const START = Date.UTC(2026, 10, 23, 12, 0, 0);

/**
 * A fresh identity service on `engine` (its own database), with a clock the test moves, and
 * factories that seed accounts, keys and partners through the domain functions.
 */
export async function openTestIdentity(
  engine: Engine,
  env: Record<string, string> = {},
  options: { realClock?: boolean } = {},
) {
  const database = await createTestDatabase(engine);
  const loaded = loadConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl,
    LOG_LEVEL: "silent",
    ...env,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  let now = START;
  const service = await openIdentityService(loaded.config, {
    clock: options.realClock ? Date.now : () => now,
  });
  const { ctx } = service;
  /** Requests over a real loopback socket, through the service's own listener. */
  const app = { request: service.request };

  const identity = {
    app,
    ctx,
    service,
    database,
    /** The service's query builder, for tests that seed or read tables directly. */
    db: service.database.db,
    /** Environment that points another process (the admin CLI) at the same database. */
    env: { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" },
    advance(ms: number) {
      now += ms;
    },
    now: () => now,
    async account(email = `person-${crypto.randomUUID()}@example.com`) {
      const created = await createAccount(ctx, email);
      if (!created.ok) throw new Error(`account: ${created.code}`);
      return created.account;
    },
    async userKey(accountId?: string) {
      const owner = accountId ?? (await identity.account()).id;
      const issued = await issueKey(ctx, "user", owner, "laptop");
      if (!issued.ok) throw new Error(issued.code);
      return { id: issued.record.id, key: issued.key, accountId: owner };
    },
    async partner(options: { listed?: boolean } = {}) {
      const owner = await identity.account();
      const created = await createPartner(ctx, {
        ownerAccountId: owner.id,
        name: "Notes",
        listed: options.listed,
      });
      if (!created.ok) throw new Error(created.reason);
      const issued = await issueKey(ctx, "partner", created.partner.id, "server");
      if (!issued.ok) throw new Error(issued.code);
      return { id: created.partner.id, keyId: issued.record.id, key: issued.key };
    },
    /** POST /api/session-tokens; returns the raw response. */
    mint(userKey: string | null, body?: string) {
      const headers: Record<string, string> = {};
      if (userKey !== null) headers.authorization = `Bearer ${userKey}`;
      return app.request("/api/session-tokens", { method: "POST", headers, body });
    },
    /** Mints a token and returns it, failing the test if minting fails. */
    async token(userKey: string, audience?: string) {
      const response = await identity.mint(
        userKey,
        audience ? JSON.stringify({ audience }) : undefined,
      );
      if (response.status !== 201) throw new Error(`mint answered ${response.status}`);
      return ((await response.json()) as { sessionToken: string }).sessionToken;
    },
    /** POST /api/verify with a raw Authorization header value (or none) and a raw body. */
    verify(authorization: string | null, body: string) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (authorization !== null) headers.authorization = authorization;
      return app.request("/api/verify", { method: "POST", headers, body });
    },
    async close() {
      await service.close();
      await database.drop();
    },
  };
  return identity;
}

export type TestIdentity = Awaited<ReturnType<typeof openTestIdentity>>;
