import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  createTestDatabase,
  startDatabaseProxy,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { loadNotesConfig } from "../src/config.ts";
import { openNotesService } from "../src/service.ts";

const EMAIL = "still.writing@example.com";

// PostgreSQL only: SQLite is a file in the process, it cannot stop under it.
if (testEngines().includes("postgres")) {
  describe("PostgreSQL stopped and back (notes API)", () => {
    let identity: TestIdentityService;
    let database: TestDatabase;
    let proxy: Awaited<ReturnType<typeof startDatabaseProxy>>;
    let server: RunningServer;
    let headers: Record<string, string>;

    before(async () => {
      identity = await startTestIdentityService();
      const partner = await identity.createPartner({ name: "Notes", ownerEmail: "op@example.com" });
      const partnerKey = await identity.createPartnerKey(partner.id);
      database = await createTestDatabase("postgres");
      proxy = await startDatabaseProxy(database.databaseUrl as string);
      const loaded = loadNotesConfig({
        DATA_DIR: database.dataDir,
        DATABASE_URL: proxy.databaseUrl,
        AGENTPASS_URL: identity.url,
        AGENTPASS_PARTNER_KEY: partnerKey.key,
        LOG_LEVEL: "silent",
      });
      if (!loaded.ok) throw new Error(loaded.error);
      const service = await openNotesService(loaded.config);
      await service.ctx.store.addUser(EMAIL, Date.now());
      server = await startServer(service, { port: 0, host: "127.0.0.1" });
      const { key } = await identity.createUserKey(EMAIL);
      const minted = await fetch(`${identity.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}` },
      });
      const { sessionToken } = (await minted.json()) as { sessionToken: string };
      headers = { "x-session-token": sessionToken, "content-type": "application/json" };
    });
    after(async () => {
      await proxy?.start();
      await server?.close();
      await proxy?.stop();
      await database?.drop();
      await identity?.close();
    });

    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return {
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        body: (await response.json()) as Record<string, unknown>,
      };
    };

    it("answers 503 and /readyz false while it is down, loses no acknowledged note, and serves again within 10 s", async (t) => {
      const before = await call("POST", "/api/notes", { title: "before the outage" });
      assert.equal(before.status, 201);
      assert.equal((await call("GET", "/readyz")).status, 200);

      await proxy.stop();
      assert.deepEqual(await call("GET", "/readyz"), {
        status: 503,
        retryAfter: "5",
        body: { ok: false, database: false },
      });
      for (const [method, path, body] of [
        ["GET", "/api/notes", undefined],
        ["POST", "/api/notes", { title: "during the outage" }],
        ["GET", "/api/tags", undefined],
      ] as const) {
        assert.deepEqual(
          await call(method, path, body),
          {
            status: 503,
            retryAfter: "5",
            body: { error: "Service unavailable", code: "unavailable" },
          },
          `${method} ${path}`,
        );
      }
      assert.equal((await call("GET", "/healthz")).status, 200, "the process itself stays alive");

      await proxy.start();
      const back = Date.now();
      let answer = await call("GET", "/api/notes");
      while (answer.status !== 200 && Date.now() - back < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await call("GET", "/api/notes");
      }
      assert.equal(answer.status, 200);
      t.diagnostic(`serving again ${Date.now() - back} ms after PostgreSQL came back`);
      assert.deepEqual(
        (answer.body.notes as { title: string }[]).map((note) => note.title),
        ["before the outage"],
        "the acknowledged note is there; the refused one was never written",
      );
      assert.equal((await call("POST", "/api/notes", { title: "after" })).status, 201);
    });

    it("answers 503 with Retry-After at its deadline while PostgreSQL hangs, and keeps every acknowledged note", {
      timeout: 30_000,
    }, async () => {
      const acknowledged = await call("POST", "/api/notes", { title: "before the stall" });
      assert.equal(acknowledged.status, 201);

      // Connections stay open and nothing comes back, as from a server stopped with SIGSTOP.
      proxy.stall();
      try {
        // Every request is answered while the stall lasts: none waits for the database.
        const answers = await Promise.all([
          ...Array.from({ length: 10 }, () => call("GET", "/api/notes")),
          ...Array.from({ length: 5 }, () => call("GET", "/api/notes?search=stall")),
          ...Array.from({ length: 5 }, () => call("POST", "/api/notes", { title: "in the stall" })),
        ]);
        for (const answer of answers) {
          assert.deepEqual(answer, {
            status: 503,
            retryAfter: "5",
            body: { error: "Service unavailable", code: "unavailable" },
          });
        }
        assert.equal((await call("GET", "/readyz")).status, 503);
      } finally {
        proxy.resume();
      }
      const back = Date.now();
      let answer = await call("GET", "/api/notes");
      while (answer.status !== 200 && Date.now() - back < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await call("GET", "/api/notes");
      }
      assert.equal(answer.status, 200);
      const titles = (answer.body.notes as { title: string }[]).map((note) => note.title);
      assert.ok(titles.includes("before the stall"), "the acknowledged note is kept");
    });
  });
}
