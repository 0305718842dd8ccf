import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, freePort, testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { listConnectedApps } from "../src/domain/grants.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { DEVICE_CODE_GRANT } from "../src/http/api/oauth/token.ts";
import { createLogger } from "../src/infra/logger.ts";
import { openIdentityService } from "../src/service.ts";
import type { StoredAuditEvent } from "../src/store/audit-store.ts";
import { START } from "./support/harness.ts";
import { runAdminCli } from "./support/run-cli.ts";
import { webClient } from "./support/web-client.ts";

/** What the OAuth client of these tests says it is, and where the trusted proxy says it is. */
const AGENT = "NotesAgent/2.1 (AuditOAuthTest)";
const CLIENT_ADDRESS = "198.51.100.23";
const FROM = { "user-agent": AGENT, "x-forwarded-for": CLIENT_ADDRESS };
const REDIRECT_URI = "http://127.0.0.1:9/callback";
const CLI = "agentpass-cli";

type Tokens = { access_token: string; refresh_token: string };

for (const engine of testEngines()) {
  describe(`audit log of the OAuth endpoints (${engine})`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let service: Awaited<ReturnType<typeof openIdentityService>>;
    /** The service also on a port of its own, for a test that resets its connection. */
    let server: Awaited<ReturnType<typeof startServer>>;
    let port: number;
    let env: Record<string, string>;
    let clientId: string;
    let now = START;
    const logLines: string[] = [];
    /** Called with each log line as it is written, before the service goes on. */
    let onLogLine: (line: string) => void = () => {};
    /** Every secret a test saw: none may be in a stored event or an audit log line. */
    const secrets: string[] = [];

    before(async () => {
      database = await createTestDatabase(engine);
      env = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const loaded = loadConfig({ ...env, TRUST_PROXY: "1" });
      if (!loaded.ok) throw new Error(loaded.error);
      const write = (line: string) => {
        logLines.push(line);
        onLogLine(line);
      };
      service = await openIdentityService(loaded.config, {
        clock: () => now,
        logger: createLogger("info", { write }),
      });
      port = await freePort();
      server = await startServer(service, { port, host: "127.0.0.1" });
      const registered = await service.request("/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          redirect_uris: [REDIRECT_URI],
          client_name: "Notes agent",
          token_endpoint_auth_method: "none",
        }),
      });
      assert.equal(registered.status, 201);
      clientId = ((await registered.json()) as { client_id: string }).client_id;
    });
    after(async () => {
      await server.close(); // and the service
      await database.drop();
    });

    async function account() {
      const created = await createAccount(service.ctx, `person-${crypto.randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      return created.account;
    }

    /** A form posted to an OAuth endpoint, by the client from its address. */
    async function post(path: string, fields: Record<string, string>, from = FROM) {
      const response = await service.request(path, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...from },
        body: new URLSearchParams(fields).toString(),
      });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : null) as unknown };
    }

    /** A person's events, newest first, as the trail stores them. */
    const eventsOf = (accountId: string) => service.ctx.audit.list({ accountId, limit: 100 });
    const actionsOf = async (accountId: string) =>
      (await eventsOf(accountId)).map((event) => event.action);

    async function grantIdOf(accountId: string) {
      const [app, ...others] = await listConnectedApps(service.ctx, accountId);
      assert.ok(app, "a connected app");
      assert.equal(others.length, 0);
      return app.id;
    }

    /** Consent in the browser, then the client exchanges the code (authorization code + PKCE). */
    async function connectApp() {
      const person = await account();
      const session = await startWebSession(service.ctx, person.id);
      const browser = webClient(service);
      browser.jar.set("agentpass_session", session);
      const verifier = randomBytes(32).toString("base64url");
      const query = new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
        state: "xyz",
      });
      const page = await browser.text(`/oauth/authorize?${query}`);
      const request = /name="request" value="([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&");
      assert.ok(request, page);
      const approved = await browser.post("/oauth/authorize", { request, decision: "approve" });
      assert.equal(approved.status, 303);
      const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
      const exchange = {
        grant_type: "authorization_code",
        code,
        redirect_uri: REDIRECT_URI,
        client_id: clientId,
        code_verifier: verifier,
      };
      const exchanged = await post("/oauth/token", exchange);
      assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
      const tokens = exchanged.body as Tokens;
      secrets.push(session, code, verifier, tokens.access_token, tokens.refresh_token);
      return { person, browser, exchange, tokens };
    }

    /** A device login started by the CLI and approved by a new person. */
    async function approvedDeviceLogin() {
      const person = await account();
      const started = await post("/oauth/device_authorization", {
        client_id: CLI,
        client_name: "work laptop",
      });
      assert.equal(started.status, 200);
      const codes = started.body as { device_code: string; user_code: string };
      secrets.push(codes.device_code, codes.user_code);
      assert.equal(await decideDeviceLogin(service.ctx, codes.user_code, person.id, true), true);
      const poll = {
        grant_type: DEVICE_CODE_GRANT,
        device_code: codes.device_code,
        client_id: CLI,
      };
      return { person, poll };
    }

    /** What a test checks of an event about a grant, by name; all but `at` and `id`. */
    const shapeOf = (event: StoredAuditEvent | undefined) =>
      event && {
        action: `${event.action} ${event.outcome}`,
        actor: [event.actorKind, event.actorId],
        accountId: event.accountId,
        subject: [event.subjectKind, event.subjectId],
        from: [event.clientAddress, event.userAgent],
        detail: event.detail,
      };

    it("records a code exchange as grant.create by the client, from the client's address", async () => {
      const { person, browser } = await connectApp();
      const grantId = await grantIdOf(person.id);
      const [created, consented] = await eventsOf(person.id);
      assert.equal(consented?.action, "consent.approve");
      assert.deepEqual(shapeOf(created), {
        action: "grant.create success",
        actor: ["client", clientId],
        accountId: person.id,
        subject: ["grant", grantId],
        from: [CLIENT_ADDRESS, AGENT],
        detail: { clientId, clientName: "Notes agent" },
      });

      const line = await runAdminCli(["audit", "--action", "grant.create", "--limit", "1"], env);
      assert.equal(line.code, 0, line.stderr);
      assert.match(line.stdout, new RegExp(`grant\\.create {2}success {2}by client:${clientId} `));
      assert.ok(line.stdout.includes(`grant:${grantId}  from ${CLIENT_ADDRESS}`), line.stdout);
      const page = await browser.text("/account/security");
      const row = /<tr data-action="grant\.create">[\s\S]*?<\/tr>/.exec(page)?.[0] ?? "";
      assert.match(
        row,
        /App connected: <strong>Notes agent<\/strong> <span class="muted">\(by the app\)/,
      );
      assert.match(row, /198\.51\.100\.23/);
      assert.match(row, /Unknown browser/, "a user agent bowser does not know is not shown");
      assert.doesNotMatch(row, /NotesAgent/);
    });

    it("records a device login's first tokens as grant.create by its client, and a second poll as nothing", async () => {
      const { person, poll } = await approvedDeviceLogin();
      const polled = await post("/oauth/token", poll);
      assert.equal(polled.status, 200, JSON.stringify(polled.body));
      const tokens = polled.body as Tokens;
      secrets.push(tokens.access_token, tokens.refresh_token);
      now += 5_000;
      assert.equal((await post("/oauth/token", poll)).status, 400, "the device code is spent");

      const [created, ...others] = await eventsOf(person.id);
      assert.deepEqual(others, [], "approved through the domain here: only the grant is recorded");
      assert.deepEqual(shapeOf(created), {
        action: "grant.create success",
        actor: ["client", CLI],
        accountId: person.id,
        subject: ["grant", await grantIdOf(person.id)],
        from: [CLIENT_ADDRESS, AGENT],
        detail: { clientId: CLI, clientName: "work laptop" },
      });
    });

    it("records nothing for a refresh, rotating or not: it makes no grant", async () => {
      const browserFlow = await connectApp();
      let token = browserFlow.tokens.refresh_token;
      for (let i = 0; i < 2; i++) {
        now += 31_000;
        const refreshed = await post("/oauth/token", {
          grant_type: "refresh_token",
          refresh_token: token,
          client_id: clientId,
        });
        assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
        const tokens = refreshed.body as Tokens;
        assert.notEqual(tokens.refresh_token, token, "rotated");
        token = tokens.refresh_token;
        secrets.push(tokens.access_token, token);
      }
      assert.deepEqual(await actionsOf(browserFlow.person.id), ["grant.create", "consent.approve"]);

      const device = await approvedDeviceLogin();
      const userKey = ((await post("/oauth/token", device.poll)).body as Tokens).refresh_token;
      secrets.push(userKey);
      const refresh = { grant_type: "refresh_token", refresh_token: userKey, client_id: CLI };
      assert.equal((await post("/oauth/token", refresh)).status, 200);
      assert.deepEqual(await actionsOf(device.person.id), ["grant.create"]);
    });

    it("records an RFC 7009 revocation as grant.revoke by the client, and one that ends nothing as nothing", async () => {
      const { person, tokens } = await connectApp();
      const grantId = await grantIdOf(person.id);
      now += 31_000;
      const refreshed = await post("/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: clientId,
      });
      const next = refreshed.body as Tokens;
      secrets.push(next.access_token, next.refresh_token);
      const elsewhere = { "user-agent": AGENT, "x-forwarded-for": "192.0.2.44" };
      // The token the refresh replaced still names the grant: revoking with it ends the grant.
      const revoked = await post("/oauth/revoke", { token: tokens.refresh_token }, elsewhere);
      assert.deepEqual(revoked, { status: 200, body: null });
      for (const token of [next.refresh_token, "apr_unknown", `apu_${"x".repeat(40)}`]) {
        assert.equal((await post("/oauth/revoke", { token }, elsewhere)).status, 200, token);
      }
      const accessToken = await post("/oauth/revoke", { token: next.access_token }, elsewhere);
      assert.equal(accessToken.status, 400, "an access token is refused, and revokes nothing");

      const [event, ...older] = await eventsOf(person.id);
      assert.deepEqual(shapeOf(event), {
        action: "grant.revoke success",
        actor: ["client", clientId],
        accountId: person.id,
        subject: ["grant", grantId],
        from: ["192.0.2.44", AGENT],
        detail: { clientId, clientName: "Notes agent" },
      });
      assert.deepEqual(
        older.map((old) => old.action),
        ["grant.create", "consent.approve"],
        "recorded once",
      );
      assert.deepEqual(await listConnectedApps(service.ctx, person.id), []);
    });

    it("records a user key made by hand and revoked by RFC 7009 as user_key.revoke by its account", async () => {
      const person = await account();
      const issued = await issueKey(service.ctx, "user", person.id, "build server");
      assert.ok(issued.ok);
      secrets.push(issued.key);
      assert.equal((await post("/oauth/revoke", { token: issued.key })).status, 200);
      const [event, ...others] = await eventsOf(person.id);
      assert.deepEqual(others, []);
      assert.deepEqual(shapeOf(event), {
        action: "user_key.revoke success",
        actor: ["account", person.id],
        accountId: person.id,
        subject: ["user_key", issued.record.id],
        from: [CLIENT_ADDRESS, AGENT],
        detail: { name: "build server" },
      });
    });

    it("records the grant a replayed code revokes as grant.revoke by the service, with the replay's address", async () => {
      const { person, browser, exchange } = await connectApp();
      const grantId = await grantIdOf(person.id);
      const replayer = { "user-agent": AGENT, "x-forwarded-for": "203.0.113.66" };
      for (let i = 0; i < 2; i++) {
        const replay = await post("/oauth/token", exchange, replayer);
        assert.equal((replay.body as { error: string }).error, "invalid_grant");
      }
      const [event, ...older] = await eventsOf(person.id);
      assert.deepEqual(shapeOf(event), {
        action: "grant.revoke success",
        actor: ["service", null],
        accountId: person.id,
        subject: ["grant", grantId],
        from: ["203.0.113.66", AGENT],
        detail: { clientId, clientName: "Notes agent", reason: "code_reused" },
      });
      assert.deepEqual(
        older.map((old) => old.action),
        ["grant.create", "consent.approve"],
        "the second replay revokes nothing more",
      );
      const page = await browser.text("/account/security");
      assert.match(
        page,
        /Connected app revoked: <strong>Notes agent<\/strong> <span class="muted">\(its authorization code was used twice\)/,
      );
    });

    it("records the grant a reused refresh token ends as grant.revoke, and tells the person in plain words", async () => {
      const { person, browser, tokens } = await connectApp();
      const grantId = await grantIdOf(person.id);
      const first = tokens.refresh_token;
      const refresh = (token: string, headers?: typeof FROM) =>
        post(
          "/oauth/token",
          { grant_type: "refresh_token", refresh_token: token, client_id: clientId },
          headers,
        );
      now += 31_000;
      const rotated = await refresh(first);
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      secrets.push((rotated.body as Tokens).access_token, (rotated.body as Tokens).refresh_token);
      now += 31_000;
      const replayer = { "user-agent": AGENT, "x-forwarded-for": "203.0.113.77" };
      for (let i = 0; i < 2; i++) {
        const replay = await refresh(first, replayer);
        assert.equal((replay.body as { error: string }).error, "invalid_grant");
      }
      const [event, ...older] = await eventsOf(person.id);
      assert.deepEqual(shapeOf(event), {
        action: "grant.revoke success",
        actor: ["service", null],
        accountId: person.id,
        subject: ["grant", grantId],
        from: ["203.0.113.77", AGENT],
        detail: { clientId, clientName: "Notes agent", reason: "refresh_token_reused" },
      });
      assert.deepEqual(
        older.map((old) => old.action),
        ["grant.create", "consent.approve"],
        "the second replay ends nothing more",
      );
      const page = await browser.text("/account/security");
      assert.match(
        page,
        /AgentPass disconnected <strong>Notes agent<\/strong>: an old refresh token was used again, which can mean it was copied/,
      );
    });

    it("records a device login's grant whose answer never reached the device as revoked by the service", async () => {
      const { person, poll } = await approvedDeviceLogin();
      const body = new URLSearchParams(poll).toString();
      // The device's process dies while its grant is made: the answer cannot arrive. (An answer
      // that arrives all the same ends the wait too, and the test fails below.)
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => {}).on("data", () => socket.destroy());
      onLogLine = (line) => {
        if (line.includes('"msg":"audit grant.create success"')) socket.resetAndDestroy();
      };
      socket.write(
        `POST /oauth/token HTTP/1.1\r\nHost: x\r\nUser-Agent: ${AGENT}\r\nX-Forwarded-For: ${CLIENT_ADDRESS}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      await once(socket, "close");
      onLogLine = () => {};
      assert.ok(await waitFor(async () => (await eventsOf(person.id)).length === 2), "taken back");
      now += 5_000;
      const polled = await post("/oauth/token", poll);
      assert.equal(polled.status, 200, "the next poll gets a new grant");
      const tokens = polled.body as Tokens;
      secrets.push(tokens.access_token, tokens.refresh_token);

      const [second, undone, first] = await eventsOf(person.id);
      const granted = await grantIdOf(person.id);
      assert.deepEqual([second?.action, second?.subjectId], ["grant.create", granted]);
      assert.equal(first?.action, "grant.create");
      assert.notEqual(first?.subjectId, granted);
      assert.deepEqual(shapeOf(undone), {
        action: "grant.revoke success",
        actor: ["service", null],
        accountId: person.id,
        subject: ["grant", first?.subjectId],
        from: [CLIENT_ADDRESS, AGENT],
        detail: { clientId: CLI, clientName: "work laptop", reason: "undelivered" },
      });
    });

    it("never records a code, a verifier or a token", async () => {
      assert.ok(secrets.length > 20);
      const rows = JSON.stringify(
        await service.database.db.selectFrom("audit_events").selectAll().execute(),
      );
      const lines = logLines.filter((line) => line.includes('"audit":')).join("\n");
      assert.match(lines, /grant\.create/);
      for (const secret of secrets) {
        assert.ok(!rows.includes(secret), `a stored event holds ${secret}`);
        assert.ok(!lines.includes(secret), `an audit log line holds ${secret}`);
      }
    });
  });
}

/** Whether `check` holds within 5 seconds, asked every 20 ms. */
async function waitFor(check: () => Promise<boolean>): Promise<boolean> {
  for (let waited = 0; waited < 5_000; waited += 20) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}
