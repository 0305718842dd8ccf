import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  createTestDatabase,
  startPgBouncer,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import pino from "pino";
import { loadNotesConfig } from "../../notes/src/config.ts";
import { type NotesService, openNotesService } from "../../notes/src/service.ts";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey, revokeKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import { type IdentityService, openIdentityService } from "../src/service.ts";

/**
 * Both services through Debian's PgBouncer in `pool_mode = transaction`, its 3 server sessions
 * shared by every client connection: what named prepared statements, settings sent at connect
 * and session locks do not survive. `DATABASE_POOL_MODE=transaction` is what makes it work.
 */
describe("the services through PgBouncer in transaction mode (postgres)", {
  skip: !testEngines().includes("postgres") && "PostgreSQL is not configured",
}, () => {
  let identityDb: TestDatabase;
  let notesDb: TestDatabase;
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>>;
  const closing: (() => Promise<void>)[] = [];
  /** `database`'s URL, through the bouncer (which serves every database of the server). */
  const viaBouncer = (database: TestDatabase) => {
    const url = new URL(database.databaseUrl as string);
    url.host = new URL(bouncer.databaseUrl).host;
    return url.toString();
  };
  const settings = { DATABASE_POOL_MODE: "transaction", DATABASE_POOL_SIZE: "8" };

  async function startIdentity(): Promise<IdentityService> {
    const loaded = loadConfig({
      DATA_DIR: identityDb.dataDir,
      DATABASE_URL: viaBouncer(identityDb),
      LOG_LEVEL: "silent",
      ...settings,
    });
    if (!loaded.ok) throw new Error(loaded.error);
    const service = await openIdentityService(loaded.config);
    closing.push(() => service.close());
    return service;
  }

  before(async () => {
    identityDb = await createTestDatabase("postgres");
    notesDb = await createTestDatabase("postgres");
    bouncer = await startPgBouncer(identityDb.databaseUrl as string, {
      poolMode: "transaction",
      serverConnections: 3,
    });
  });
  after(async () => {
    for (const close of closing.reverse()) await close();
    await bouncer.close();
    await notesDb.drop();
    await identityDb.drop();
  });

  let first: IdentityService;
  let second: IdentityService;
  const mint = (service: IdentityService, userKey: string) =>
    service.request("/api/session-tokens", {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
    });
  const verify = (service: IdentityService, partnerKey: string, sessionToken: string) =>
    service.request("/api/verify", {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey}` },
      body: JSON.stringify({ sessionToken }),
    });

  it("identity: creates keys, mints, verifies, and refuses on the next request once revoked, on two instances", async () => {
    // Both migrate at start through the pooler, at once.
    [first, second] = await Promise.all([startIdentity(), startIdentity()]);
    const { ctx } = first;
    const account = await createAccount(ctx, "bouncer@example.com");
    assert.ok(account.ok);
    const userKey = await issueKey(ctx, "user", account.account.id, "laptop");
    const partner = await createPartner(ctx, { ownerAccountId: account.account.id, name: "P" });
    assert.ok(userKey.ok && partner.ok);
    const partnerKey = await issueKey(ctx, "partner", partner.partner.id, "server");
    assert.ok(partnerKey.ok);

    const minted = await mint(second, userKey.key);
    assert.equal(minted.status, 201);
    const { sessionToken } = (await minted.json()) as { sessionToken: string };
    const answers = await Promise.all(
      [first, second].flatMap((service) =>
        Array.from({ length: 20 }, () => verify(service, partnerKey.key, sessionToken)),
      ),
    );
    assert.deepEqual(
      answers.map((answer) => answer.status),
      Array(40).fill(200),
    );

    assert.deepEqual(await revokeKey(ctx, "partner", partnerKey.record.id), { ok: true });
    assert.equal((await verify(second, partnerKey.key, sessionToken)).status, 403);
    assert.equal((await verify(first, partnerKey.key, sessionToken)).status, 403);
    assert.deepEqual(await revokeKey(ctx, "user", userKey.record.id), { ok: true });
    assert.equal((await mint(second, userKey.key)).status, 403);

    // A rotation by one instance seals on the other from its next request.
    const rotated = await first.ctx.sealingKeys.rotate();
    assert.ok(rotated.ok);
    const otherKey = await issueKey(ctx, "user", account.account.id, "desktop");
    assert.ok(otherKey.ok);
    assert.equal((await mint(second, otherKey.key)).status, 201);
    assert.equal(second.ctx.sealingKeys.current.id, rotated.id);
  });

  it("notes: a note is written, listed and found by search", async () => {
    // The first instance on a socket (its own close stays with the other closings).
    const identity: RunningServer = await startServer(
      { listener: first.listener, close: async () => {} },
      { port: 0, host: "127.0.0.1" },
    );
    closing.push(() => identity.close());
    const { ctx } = first;
    const operator = await createAccount(ctx, "notes-operator@example.com");
    assert.ok(operator.ok);
    const partner = await createPartner(ctx, { ownerAccountId: operator.account.id, name: "N" });
    assert.ok(partner.ok);
    const partnerKey = await issueKey(ctx, "partner", partner.partner.id, "notes");
    const person = await createAccount(ctx, "writer@example.com");
    assert.ok(partnerKey.ok && person.ok);
    const userKey = await issueKey(ctx, "user", person.account.id, "agent");
    assert.ok(userKey.ok);

    const loaded = loadNotesConfig({
      DATA_DIR: notesDb.dataDir,
      DATABASE_URL: viaBouncer(notesDb),
      AGENTPASS_URL: identity.url,
      AGENTPASS_PARTNER_KEY: partnerKey.key,
      ...settings,
    });
    if (!loaded.ok) throw new Error(loaded.error);
    const notes: NotesService = await openNotesService(loaded.config, {
      logger: pino({ level: "silent" }),
    });
    closing.push(() => notes.close());
    await notes.ctx.store.addUser("writer@example.com", Date.now());
    const { sessionToken } = (await (await mint(first, userKey.key)).json()) as {
      sessionToken: string;
    };
    const call = (method: string, path: string, body?: unknown) =>
      notes.request(path, {
        method,
        headers: { "x-session-token": sessionToken, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const created = await call("POST", "/api/notes", {
      title: "Pooler notes",
      contentText: "transaction pooling keeps nothing between transactions",
    });
    assert.equal(created.status, 201);
    for (const path of ["/api/notes", "/api/notes?search=pooling"]) {
      const listed = await call("GET", path);
      assert.equal(listed.status, 200, path);
      const { notes: found, total } = (await listed.json()) as {
        notes: { title: string }[];
        total: number;
      };
      assert.deepEqual([found.map((note) => note.title), total], [["Pooler notes"], 1], path);
    }
  });
});
