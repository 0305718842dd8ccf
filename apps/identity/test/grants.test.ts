import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { migrateToLatest, openDatabase } from "@agentpass/db";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { createGrant, listConnectedApps, refreshGrant } from "../src/domain/grants.ts";
import { generateKey, hashKey } from "../src/domain/keys.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { createMemoryRateLimitStore, createRateLimiter } from "../src/infra/rate-limit.ts";
import { openIdentityService } from "../src/service.ts";
import { identityMigrations } from "../src/store/migrations.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { openTestIdentity, START, type TestIdentity } from "./support/harness.ts";
import { webClient } from "./support/web-client.ts";

type TokenAnswer = {
  access_token?: string;
  refresh_token?: string;
  error?: string;
  error_description?: string;
};

for (const engine of testEngines()) {
  describe(`grants (${engine})`, () => {
    let identity: TestIdentity;
    let partner: Awaited<ReturnType<TestIdentity["partner"]>>;

    before(async () => {
      identity = await openTestIdentity(engine);
      partner = await identity.partner();
    });
    after(() => identity.close());
    // On PostgreSQL the rate-limit windows follow the database's clock, which `advance` does not
    // move: every test starts with no counts.
    beforeEach(async () => {
      if (engine === "postgres") await identity.db.deleteFrom("rate_limits").execute();
    });

    /** A person's consent to a browser-flow client: a grant with a rotating refresh token. */
    async function consent(accountId?: string) {
      const owner = accountId ?? (await identity.account()).id;
      const grant = await createGrant(identity.ctx, {
        accountId: owner,
        client: { id: "apc_test", name: "Test agent", verified: false },
        audience: null,
        createdFrom: "192.0.2.7",
        rotating: true,
      });
      return { ...grant, accountId: owner };
    }

    async function refresh(refreshToken: string, clientId = "apc_test") {
      const response = await identity.app.request("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: refreshToken,
          client_id: clientId,
        }).toString(),
      });
      return { status: response.status, body: (await response.json()) as TokenAnswer };
    }

    async function revoke(token: string) {
      const response = await identity.app.request("/oauth/revoke", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token }).toString(),
      });
      return response.status;
    }

    async function verifies(accessToken: string | undefined) {
      const response = await identity.verify(
        `Bearer ${partner.key}`,
        JSON.stringify({ sessionToken: accessToken }),
      );
      return response.status === 200;
    }

    async function rowsOf(accountId: string) {
      const keys = await identity.db
        .selectFrom("user_keys")
        .select("id")
        .where("account_id", "=", accountId)
        .execute();
      const grants = await identity.db
        .selectFrom("grants")
        .select("key_id")
        .where(
          "key_id",
          "in",
          keys.map((key) => key.id),
        )
        .execute();
      return { keys: keys.length, grants: grants.length };
    }

    async function signedIn(accountId: string) {
      const browser = webClient(identity.app);
      browser.jar.set("agentpass_session", await startWebSession(identity.ctx, accountId));
      return browser;
    }

    it("rotates inside the grant: a new refresh token each time, and still one row", async () => {
      const grant = await consent();
      let token = grant.refreshToken;
      for (let i = 0; i < 5; i++) {
        identity.advance(31_000);
        const answer = await refresh(token);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.match(answer.body.refresh_token ?? "", /^apr_/);
        assert.notEqual(answer.body.refresh_token, token);
        assert.ok(await verifies(answer.body.access_token));
        token = answer.body.refresh_token ?? "";
      }
      assert.deepEqual(await rowsOf(grant.accountId), { keys: 1, grants: 1 });
    });

    it("cuts off a client refreshing every second with one revoke on the dashboard", async () => {
      const grant = await consent();
      const browser = await signedIn(grant.accountId);
      let token = grant.refreshToken;
      let access = "";
      for (let i = 0; i < 3; i++) {
        identity.advance(1000);
        const answer = await refresh(token);
        token = answer.body.refresh_token ?? "";
        access = answer.body.access_token ?? "";
      }
      const page = await browser.text("/keys");
      assert.equal(page.split(`data-grant="${grant.id}"`).length, 2, "listed once");
      assert.match(page, /Test agent/);
      assert.match(page, /from 192\.0\.2\.7/);

      // The revoke confirms first: a GET changes nothing, a post without confirm neither.
      const confirm = await browser.get(`/connected-apps/${grant.id}/revoke`);
      assert.equal(confirm.status, 200);
      assert.match(await confirm.text(), /Revoke this app\?/);
      await browser.post(`/connected-apps/${grant.id}/revoke`, {});
      identity.advance(1000);
      const stillWorks = await refresh(token);
      assert.equal(stillWorks.status, 200);
      token = stillWorks.body.refresh_token ?? "";

      const revoked = await browser.post(`/connected-apps/${grant.id}/revoke`, { confirm: "yes" });
      assert.equal(revoked.status, 303);
      assert.equal(await verifies(stillWorks.body.access_token), false, "on the next request");
      assert.equal(await verifies(access), false);
      identity.advance(1000);
      const after = await refresh(token);
      assert.equal(after.status, 400);
      assert.equal(after.body.error, "invalid_grant");
      assert.doesNotMatch(await browser.text("/keys"), new RegExp(grant.id));
    });

    it("gives the same successor to a refresh token presented again within the grace window", async () => {
      const grant = await consent();
      const answers = await Promise.all([1, 2, 3, 4].map(() => refresh(grant.refreshToken)));
      for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const successors = new Set(answers.map((answer) => answer.body.refresh_token));
      assert.equal(successors.size, 1, "every parallel caller holds the same pair");
      for (const answer of answers) assert.ok(await verifies(answer.body.access_token));
      identity.advance(29_000);
      const late = await refresh(grant.refreshToken);
      assert.equal(late.status, 200, "still within 30 s");
      assert.equal(late.body.refresh_token, answers[0]?.body.refresh_token);
      // The successor itself, inside the window, is not rotated again: a caller that read it
      // first and one that read the old token end with the same pair.
      const current = await refresh(late.body.refresh_token ?? "");
      assert.equal(current.status, 200);
      assert.equal(current.body.refresh_token, late.body.refresh_token);
      assert.equal(
        (await refresh(grant.refreshToken)).status,
        200,
        "the old one still leads there",
      );
      identity.advance(2_000);
      const next = await refresh(late.body.refresh_token ?? "");
      assert.equal(next.status, 200, "the grant lives on");
      assert.notEqual(next.body.refresh_token, late.body.refresh_token, "rotated after the window");
      assert.deepEqual(await rowsOf(grant.accountId), { keys: 1, grants: 1 });
    });

    it("revokes the family when a replaced token comes back after the grace window", async () => {
      const grant = await consent();
      const first = await refresh(grant.refreshToken);
      identity.advance(31_000);
      const replay = await refresh(grant.refreshToken);
      assert.equal(replay.status, 400);
      assert.equal(replay.body.error, "invalid_grant");
      assert.equal(await verifies(first.body.access_token), false);
      assert.equal((await refresh(first.body.refresh_token ?? "")).status, 400);
    });

    it("gives no grace to a token older than the one just replaced", async () => {
      const grant = await consent();
      const first = await refresh(grant.refreshToken);
      identity.advance(31_000);
      const second = await refresh(first.body.refresh_token ?? "");
      assert.equal(second.status, 200);
      assert.notEqual(second.body.refresh_token, first.body.refresh_token);
      const replay = await refresh(grant.refreshToken);
      assert.equal(replay.status, 400, "two generations old, within seconds of the last rotation");
      assert.equal((await refresh(second.body.refresh_token ?? "")).status, 400);
      assert.equal(await verifies(second.body.access_token), false);
    });

    it("refuses a forged token of a real grant without revoking the grant", async () => {
      const grant = await consent();
      const [prefix = "", , generation = "", secret = ""] = grant.refreshToken.split(".");
      const forged = `${prefix}.${"A".repeat(22)}.${generation}.${secret}`;
      assert.equal((await refresh(forged)).status, 400);
      assert.equal(await revoke(forged), 200, "RFC 7009: an unknown token is not an error");
      assert.equal((await refresh(grant.refreshToken)).status, 200, "the grant works");
    });

    it("refuses another client's refresh token, and does not count it as a replay", async () => {
      const grant = await consent();
      assert.equal((await refresh(grant.refreshToken, "apc_other")).body.error, "invalid_grant");
      assert.equal((await refresh(grant.refreshToken)).status, 200);
    });

    it("ends a grant rotated 10,000 times in one write, by RFC 7009 with its first token", async () => {
      const grant = await consent();
      const clock = identity.ctx.clock;
      const store = createMemoryRateLimitStore(clock);
      const unlimited = (name: string) =>
        createRateLimiter(store, { name, limit: 1_000_000, windowMs: 60_000, clock });
      const limits = { perGrant: unlimited("grant"), perAccount: unlimited("account") };
      const changes = async () =>
        Number(
          (
            await identity.db
              .selectFrom("key_changes")
              .select((eb) => eb.fn.countAll<number | string>().as("count"))
              .executeTakeFirstOrThrow()
          ).count,
        );
      const before = await changes();
      let token = grant.refreshToken;
      let access = "";
      for (let i = 0; i < 10_000; i++) {
        identity.advance(31_000);
        const result = await refreshGrant(
          identity.ctx,
          { refreshToken: token, clientId: "apc_test", audience: null, jkt: null },
          limits,
        );
        assert.ok(result.ok && result.refreshToken && result.refreshToken !== token);
        token = result.refreshToken;
        access = result.accessToken;
      }
      // The loop ran in promise continuations alone, the event loop's timers held back: on a slow
      // machine past the server's keep-alive timeout. Let them run (the idle connection closes)
      // before the next request, or it goes out on the connection being closed (ECONNRESET).
      await new Promise((resolve) => setTimeout(resolve, 1));
      assert.deepEqual(await rowsOf(grant.accountId), { keys: 1, grants: 1 });
      assert.equal(await changes(), before, "a rotation changes no cached read");
      assert.ok(await verifies(access));

      assert.equal(await revoke(grant.refreshToken), 200);
      assert.equal(await changes(), before + 1, "one row revoked, whatever the rotations");
      assert.equal(await verifies(access), false);
      assert.equal((await refresh(token)).status, 400);
    });

    it("limits refreshes per account, and another account's refresh goes on", async () => {
      const owner = (await identity.account()).id;
      const grants = [await consent(owner), await consent(owner), await consent(owner)];
      const tokens = grants.map((grant) => grant.refreshToken);
      let refused: Awaited<ReturnType<typeof refresh>> | undefined;
      // 120 a minute, in windows of the database's clock: a loop that crosses a window's edge
      // (on PostgreSQL, whose windows are real minutes) starts counting afresh, and still meets
      // the limit within 250.
      for (let i = 0; i < 250 && !refused; i++) {
        const at = i % 3;
        const answer = await refresh(tokens[at] ?? "");
        if (answer.status === 429) refused = answer;
        else tokens[at] = answer.body.refresh_token ?? "";
      }
      assert.ok(refused, "the account's refreshes are bounded");
      assert.equal(
        refused.body.error,
        "temporarily_unavailable",
        "slow_down is the device grant's",
      );
      const stranger = await consent();
      assert.equal((await refresh(stranger.refreshToken)).status, 200);
    });

    it("disconnects every app on 'sign out everywhere' only when the person asks", async () => {
      const owner = (await identity.account()).id;
      const grant = await consent(owner);
      const kept = await signedIn(owner);
      await kept.get("/account");
      await kept.post("/sign-out-everywhere", {});
      assert.equal((await refresh(grant.refreshToken)).status, 200, "apps kept by default");
      const identityAgain = await signedIn(owner);
      await identityAgain.get("/account");
      await identityAgain.post("/sign-out-everywhere", { apps: "yes" });
      assert.deepEqual(await listConnectedApps(identity.ctx, owner), []);
    });

    it("makes each chain of rotated keys one grant on migration, and its token refreshes", async () => {
      const database = await createTestDatabase(engine);
      after(() => database.drop());
      const old = openDatabase<IdentityDatabase>({
        databaseUrl: database.databaseUrl,
        dataDir: database.dataDir,
        fileName: "identity.sqlite",
      });
      const released = Object.entries(identityMigrations(engine)).filter(([name]) => name < "0011");
      await migrateToLatest(old.db, "identity", Object.fromEntries(released));
      const accountId = crypto.randomUUID();
      await old.db
        .insertInto("accounts")
        .values({ id: accountId, email: "chain@example.com", created_at: START })
        .execute();
      const keys = { head: generateKey("user"), handMade: generateKey("user") };
      const key = (id: string, fields: Partial<IdentityDatabase["user_keys"]>) => ({
        id,
        account_id: accountId,
        name: "OAuth: apc_old",
        display_prefix: "apu_xxxxxxxx",
        secret_hash: hashKey(generateKey("user")),
        created_at: START,
        last_used_at: null,
        revoked_at: null,
        client_id: "apc_old",
        audience: null,
        rotating: 1,
        replaced_by: null,
        ...fields,
      });
      const [one, two, three] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      await old.db
        .insertInto("user_keys")
        .values([
          key(one, { revoked_at: START, replaced_by: two }),
          key(two, { revoked_at: START, replaced_by: three }),
          key(three, { secret_hash: hashKey(keys.head) }),
          key(crypto.randomUUID(), {
            name: "laptop",
            client_id: null,
            rotating: 0,
            secret_hash: hashKey(keys.handMade),
          }),
        ])
        .execute();
      await old.close();

      const loaded = loadConfig({
        DATA_DIR: database.dataDir,
        DATABASE_URL: database.databaseUrl ?? "",
        LOG_LEVEL: "silent",
      });
      if (!loaded.ok) throw new Error(loaded.error);
      const service = await openIdentityService(loaded.config, { clock: () => START });
      try {
        const apps = await listConnectedApps(service.ctx, accountId);
        assert.deepEqual(
          apps.map((app) => app.id),
          [three],
          "one grant for the chain",
        );
        const hand = await service.ctx.store.listKeys("user_keys", accountId);
        assert.deepEqual(
          hand.map((k) => k.name),
          ["laptop"],
          "a key made by hand stays a key",
        );
        const limiter = (name: string) =>
          createRateLimiter(createMemoryRateLimitStore(service.ctx.clock), {
            name,
            limit: 100,
            windowMs: 60_000,
            clock: service.ctx.clock,
          });
        const limits = { perGrant: limiter("grant"), perAccount: limiter("account") };
        const fields = { refreshToken: keys.head, clientId: "apc_old", audience: null, jkt: null };
        const first = await refreshGrant(service.ctx, fields, limits);
        assert.ok(first.ok && first.refreshToken?.startsWith("apr_"), JSON.stringify(first));
        const again = await refreshGrant(service.ctx, fields, limits);
        assert.ok(again.ok, "the old token within its grace");
        assert.equal(again.refreshToken, first.refreshToken);
        const next = await refreshGrant(
          service.ctx,
          { ...fields, refreshToken: first.refreshToken ?? "" },
          limits,
        );
        assert.ok(next.ok);
      } finally {
        await service.close();
      }
    });
  });
}
