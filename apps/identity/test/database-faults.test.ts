import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  createTestDatabase,
  startDatabaseProxy,
  type TestDatabase,
  testEngines,
} from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { createPartner } from "../src/domain/partners.ts";
import { openIdentityService } from "../src/service.ts";

// PostgreSQL only: SQLite is a file in the process, it cannot stop under it.
if (testEngines().includes("postgres")) {
  describe("PostgreSQL stopped and back (identity service)", () => {
    let database: TestDatabase;
    let proxy: Awaited<ReturnType<typeof startDatabaseProxy>>;
    let server: RunningServer;
    let userKey: string;
    let partnerKey: string;

    before(async () => {
      database = await createTestDatabase("postgres");
      proxy = await startDatabaseProxy(database.databaseUrl as string);
      const loaded = loadConfig({
        DATA_DIR: database.dataDir,
        DATABASE_URL: proxy.databaseUrl,
        LOG_LEVEL: "silent",
      });
      if (!loaded.ok) throw new Error(loaded.error);
      const service = await openIdentityService(loaded.config);
      server = await startServer(service, { port: 0, host: "127.0.0.1" });
      const { ctx } = service;
      const account = await createAccount(ctx, "still.here@example.com");
      if (!account.ok) throw new Error(account.code);
      const user = await issueKey(ctx, "user", account.account.id, "laptop");
      const partner = await createPartner(ctx, { ownerAccountId: account.account.id, name: "P" });
      if (!user.ok || !partner.ok) throw new Error("seed failed");
      const partnerIssued = await issueKey(ctx, "partner", partner.partner.id, "server");
      if (!partnerIssued.ok) throw new Error(partnerIssued.code);
      userKey = user.key;
      partnerKey = partnerIssued.key;
    });
    after(async () => {
      await proxy?.start();
      await server?.close();
      await proxy?.stop();
      await database?.drop();
    });

    const call = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${server.url}${path}`, init);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const mint = () =>
      fetch(`${server.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      });
    const verify = (sessionToken: string) =>
      call("/api/verify", {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken }),
      });

    it("answers 503 and /readyz false while it is down, and serves again within 10 s of its return", async (t) => {
      const token = ((await (await mint()).json()) as { sessionToken: string }).sessionToken;
      assert.deepEqual(await verify(token), {
        status: 200,
        body: { email: "still.here@example.com" },
      });
      assert.equal((await call("/readyz")).status, 200);

      await proxy.stop();
      assert.deepEqual(await call("/readyz"), {
        status: 503,
        body: { ok: false, database: false },
      });
      const refused = await fetch(`${server.url}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken: token }),
      });
      assert.equal(refused.status, 503, "never fail-open, never a 500");
      assert.equal(refused.headers.get("retry-after"), "5");
      assert.deepEqual(await refused.json(), { error: "Service unavailable", code: "unavailable" });
      const refusedMint = await mint();
      assert.equal(refusedMint.status, 503);
      assert.deepEqual(await refusedMint.json(), {
        error: "Service unavailable",
        code: "unavailable",
      });
      assert.equal((await call("/healthz")).status, 200, "the process itself stays alive");

      await proxy.start();
      const back = Date.now();
      let answer = await verify(token);
      while (answer.status !== 200 && Date.now() - back < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await verify(token);
      }
      assert.deepEqual(answer, { status: 200, body: { email: "still.here@example.com" } });
      t.diagnostic(`serving again ${Date.now() - back} ms after PostgreSQL came back`);
      assert.equal((await call("/readyz")).status, 200);
      assert.equal((await mint()).status, 201);
    });

    it("answers 503 with Retry-After at its deadline while PostgreSQL hangs, never waiting on it", {
      timeout: 30_000,
    }, async () => {
      const token = ((await (await mint()).json()) as { sessionToken: string }).sessionToken;
      assert.equal((await verify(token)).status, 200);

      // Connections stay open and nothing comes back, as from a server stopped with SIGSTOP.
      proxy.stall();
      try {
        // Every request is answered while the stall lasts: none waits for the database.
        const answers = await Promise.all([
          ...Array.from({ length: 15 }, () =>
            fetch(`${server.url}/api/verify`, {
              method: "POST",
              headers: { authorization: `Bearer ${partnerKey}` },
              body: JSON.stringify({ sessionToken: token }),
            }),
          ),
          ...Array.from({ length: 15 }, () => mint()),
        ]);
        for (const answer of answers) {
          assert.equal(answer.status, 503, "never a pass, never a 500, never a hang");
          assert.equal(answer.headers.get("retry-after"), "5");
          assert.deepEqual(await answer.json(), {
            error: "Service unavailable",
            code: "unavailable",
          });
        }
        assert.equal((await call("/readyz")).status, 503);
      } finally {
        proxy.resume();
      }
      const back = Date.now();
      let answer = await verify(token);
      while (answer.status !== 200 && Date.now() - back < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = await verify(token);
      }
      assert.deepEqual(answer, { status: 200, body: { email: "still.here@example.com" } });
      assert.equal((await mint()).status, 201);
    });
  });
}
