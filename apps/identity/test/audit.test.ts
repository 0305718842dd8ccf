import assert from "node:assert/strict";
import { userInfo } from "node:os";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { DEFAULT_RETENTION, loadConfig } from "../src/config.ts";
import { createLogger } from "../src/infra/logger.ts";
import { openIdentityService } from "../src/service.ts";
import type { StoredAuditEvent } from "../src/store/audit-store.ts";
import { purgeExpired } from "../src/store/purge.ts";
import { START } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { runAdminCli } from "./support/run-cli.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const DAY = 24 * 60 * 60 * 1000;
/** What the browsers of these tests say they are, and where the trusted proxy says they are. */
const BROWSER = "Mozilla/5.0 (AuditTest) Firefox/140.0";
const FROM = { "user-agent": BROWSER, "x-forwarded-for": "203.0.113.7" };

interface AuditLine {
  audit: { action: string; outcome: string; accountId: string | null };
}

/** An event as `agentpass-server audit --json` prints it. */
type CliEvent = Omit<StoredAuditEvent, "at"> & { at: string };

for (const engine of testEngines()) {
  describe(`audit log (${engine})`, () => {
    let mailbox: Mailbox;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let service: Awaited<ReturnType<typeof openIdentityService>>;
    let env: Record<string, string>;
    let now = START;
    const logLines: string[] = [];
    /** Every secret a test saw: none may be in a stored event or an audit log line. */
    const secrets: string[] = [];

    before(async () => {
      mailbox = await startMailbox();
      database = await createTestDatabase(engine);
      env = { DATA_DIR: database.dataDir, DATABASE_URL: database.databaseUrl ?? "" };
      const loaded = loadConfig({ ...env, SMTP_URL: mailbox.url, TRUST_PROXY: "1" });
      if (!loaded.ok) throw new Error(loaded.error);
      service = await openIdentityService(loaded.config, {
        clock: () => now,
        logger: createLogger("info", { write: (line: string) => void logLines.push(line) }),
      });
    });
    after(async () => {
      await service.close();
      await database.drop();
      await mailbox.close();
    });

    const browser = () => webClient(service);
    const uniqueEmail = () => `person-${crypto.randomUUID()}@example.com`;

    async function askCode(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      const response = await client.post("/sign-in", { email, next: "/keys" }, FROM);
      assert.equal(response.status, 303);
      const found = signInSecrets(await mailbox.next(email, since));
      secrets.push(found.code, found.link);
      return found;
    }

    async function signIn(client: WebClient, email = uniqueEmail()) {
      const { code } = await askCode(client, email);
      const response = await client.post("/sign-in/code", { code, next: "/keys" }, FROM);
      assert.equal(response.status, 303, "the code signs in");
      for (const value of client.jar.values()) secrets.push(value);
      return email;
    }

    async function createUserKey(client: WebClient, name: string) {
      const page = await (await client.follow(await client.post("/keys", { name }, FROM))).text();
      const key = /id="new-key" class="secret">(apu_[A-Za-z0-9]+)</.exec(page)?.[1];
      assert.ok(key, "the new key is shown once");
      secrets.push(key);
      const id = /href="\/keys\/([0-9a-f-]+)\/revoke"/.exec(page)?.[1];
      assert.ok(id);
      return { key, id };
    }

    async function audit(...args: string[]): Promise<CliEvent[]> {
      const run = await runAdminCli(["audit", "--json", ...args], env);
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as CliEvent[];
    }

    const auditLines = () =>
      logLines.map((line) => JSON.parse(line) as Partial<AuditLine>).filter((line) => line.audit);

    it("shows a key revoked on the dashboard in `agentpass-server audit` and on the person's page, with its address", async () => {
      const client = browser();
      const email = await signIn(client);
      const { id } = await createUserKey(client, "travel laptop");
      const revoked = await client.post(`/keys/${id}/revoke`, { confirm: "yes" }, FROM);
      assert.equal(revoked.status, 303);

      const [event] = await audit("--account", email, "--action", "user_key.revoke");
      assert.ok(event, "the revocation is listed");
      assert.equal(event.outcome, "success");
      assert.equal(event.actorKind, "account");
      assert.equal(event.actorId, event.accountId);
      assert.deepEqual([event.subjectKind, event.subjectId], ["user_key", id]);
      assert.equal(event.clientAddress, "203.0.113.7");
      assert.equal(event.userAgent, BROWSER);
      assert.equal(event.at, new Date(now).toISOString());

      const page = await client.text("/account/security");
      const row = /<tr data-action="user_key\.revoke">[\s\S]*?<\/tr>/.exec(page)?.[0] ?? "";
      assert.match(row, /User key revoked: <strong>travel laptop<\/strong>/);
      assert.match(row, /203\.0\.113\.7/);
      assert.match(row, /Firefox/, "the browser as bowser names it");
      assert.doesNotMatch(row, /AuditTest/, "never the user agent as sent");
      assert.ok(
        page.indexOf('data-action="user_key.revoke"') < page.indexOf('data-action="sign_in"'),
        "newest first",
      );

      const logged = auditLines().find((line) => line.audit?.action === "user_key.revoke");
      assert.equal(logged?.audit?.accountId, event.accountId, "written as a JSON log line too");
    });

    it("records a failed sign-in and the lockout on the account of the address", async () => {
      const email = await signIn(browser());
      const stranger = browser();
      await askCode(stranger, email);
      for (let i = 0; i < 5; i++) {
        const tried = await stranger.post("/sign-in/code", { code: "000000", next: "/keys" }, FROM);
        assert.equal(tried.status, 400);
      }
      // Another process (the CLI) sees repeats once the service writes them, within a second.
      await service.ctx.audit.flush();
      const events = await audit("--account", email, "--action", "sign_in");
      assert.deepEqual(
        events.map((event) => [event.outcome, event.occurrences]),
        [
          ["locked_out", 1],
          ["failure", 4],
          ["success", 1],
        ],
        "a stranger's repeated failures fold into one row",
      );
      assert.ok(events.every((event) => event.clientAddress === "203.0.113.7"));
      const signedOut = await browser().get("/account/security");
      assert.equal(signedOut.status, 303, "a signed-out browser is sent to sign in");
    });

    it("shows a person only their own account's events", async () => {
      const alice = browser();
      await signIn(alice);
      await createUserKey(alice, "alice-secret-project");
      const bob = browser();
      await signIn(bob);
      const page = await bob.text("/account/security");
      assert.match(page, /data-action="sign_in"/);
      assert.doesNotMatch(page, /alice-secret-project/);
      assert.doesNotMatch(page, /user_key\.create/);
      const older = await bob.text("/account/security?before=999999999");
      assert.doesNotMatch(older, /alice-secret-project/);
    });

    it("records the admin CLI's changes, with the operator as the actor, by name", async () => {
      const email = uniqueEmail();
      const named = { ...env, AGENTPASS_OPERATOR: "oncall-alice" };
      assert.equal((await runAdminCli(["accounts", "create", email], named)).code, 0);
      const created = await runAdminCli(
        ["user-keys", "create", email, "--json", "--operator", "bob"],
        named,
      );
      const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
      secrets.push(key);
      assert.equal((await runAdminCli(["user-keys", "revoke", id], env)).code, 0);
      const events = await audit("--account", email);
      const systemUser = userInfo().username;
      assert.deepEqual(
        events.map((event) => [event.action, event.actorKind, event.actorId, event.clientAddress]),
        [
          ["user_key.revoke", "admin", systemUser, null],
          ["user_key.create", "admin", "bob", null],
          ["account.create", "admin", "oncall-alice", null],
        ],
        "--operator, else AGENTPASS_OPERATOR, else the system user",
      );
      const text = await runAdminCli(["audit", "--action", "user_key.create", "--limit", "1"], env);
      assert.equal(text.stdout.trim().split("\n").length, 1);
      assert.match(text.stdout, /user_key\.create {2}success {2}by admin:bob/);
      const rotated = await runAdminCli(["sealing-keys", "rotate"], env);
      const [rotation] = await audit("--action", "sealing_key.rotate");
      assert.deepEqual(
        [rotation?.actorKind, rotation?.accountId, rotation?.subjectId],
        ["admin", null, rotated.stdout.trim()],
      );
      const refused = await runAdminCli(["audit", "--since", "yesterday"], env);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /--since must be a date/);
    });

    it("records partners, partner keys and sign-out", async () => {
      const client = browser();
      const email = await signIn(client);
      const partner = await client.post("/partners", { name: "Weather API" }, FROM);
      const path = partner.headers.get("location") ?? "";
      const page = await (
        await client.follow(await client.post(`${path}/keys`, { name: "production" }, FROM))
      ).text();
      const key = /id="new-key" class="secret">(apk_[A-Za-z0-9]+)</.exec(page)?.[1];
      assert.ok(key);
      secrets.push(key);
      await client.post(`${path}/delete`, { confirm: "yes" }, FROM);
      await client.post("/sign-out", {}, FROM);
      const events = await audit("--account", email);
      assert.deepEqual(
        events.map((event) => event.action),
        ["sign_out", "partner.delete", "partner_key.create", "partner.create", "sign_in"],
      );
    });

    it("records device logins approved and denied, and a connected app revoked", async () => {
      const startLogin = async () => {
        const response = await service.request("/api/device/code", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ client_name: "work laptop" }),
        });
        const started = (await response.json()) as { user_code: string; device_code: string };
        secrets.push(started.user_code, started.device_code);
        return started;
      };
      const client = browser();
      const email = await signIn(client);
      const approved = await startLogin();
      const decision = { code: approved.user_code, decision: "approve" };
      assert.equal((await client.post("/device", decision, FROM)).status, 303);
      const polled = await service.request("/api/device/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...FROM },
        body: new URLSearchParams({ device_code: approved.device_code }).toString(),
      });
      assert.equal(polled.status, 200);
      const issued = (await polled.json()) as { user_key: string };
      secrets.push(issued.user_key);
      const grant = /data-grant="([^"]+)"/.exec(await client.text("/keys"))?.[1] ?? "";
      const revoked = await client.post(
        `/connected-apps/${grant}/revoke`,
        { confirm: "yes" },
        FROM,
      );
      assert.equal(revoked.status, 303);
      const denied = await startLogin();
      await client.post("/device", { code: denied.user_code, decision: "deny" }, FROM);

      const events = await audit("--account", email);
      assert.deepEqual(
        events.map((event) => [event.action, event.subjectKind, event.clientAddress]),
        [
          ["device_login.deny", "device_login", "203.0.113.7"],
          ["grant.revoke", "grant", "203.0.113.7"],
          ["grant.create", "grant", "203.0.113.7"],
          ["device_login.approve", "device_login", "203.0.113.7"],
          ["sign_in", "account", "203.0.113.7"],
        ],
      );
      assert.equal(events[1]?.subjectId, grant);
      assert.equal(events[2]?.subjectId, grant, "the grant the device's poll made");
      assert.match(await client.text("/account/security"), /Device login approved/);
    });

    it("never records a key, a code, a link or a session", async () => {
      assert.ok(secrets.length > 10);
      const rows = JSON.stringify(
        await service.database.db.selectFrom("audit_events").selectAll().execute(),
      );
      const lines = JSON.stringify(auditLines());
      for (const secret of secrets) {
        assert.ok(!rows.includes(secret), `a stored event holds ${secret}`);
        assert.ok(!lines.includes(secret), `an audit log line holds ${secret}`);
      }
    });

    it("purges events older than the retention", async () => {
      const before = await audit("--limit", "10000");
      assert.ok(before.length > 0);
      // Past every event so far, those of the admin CLI (on the system's clock) included.
      now = Math.max(now, Date.now()) + 31 * DAY;
      await browser().get("/sign-in"); // nothing recorded: a page view is no event
      await signIn(browser());
      const deleted = await purgeExpired(service.database, now, {
        ...DEFAULT_RETENTION,
        auditDays: 30,
      });
      assert.equal(deleted.audit_events, before.length);
      const kept = await audit("--limit", "10000");
      assert.deepEqual(
        kept.map((event) => event.action),
        ["sign_in"],
      );
      const defaults = loadConfig({});
      assert.ok(defaults.ok);
      assert.equal(defaults.config.retention.auditDays, 400, "AUDIT_RETENTION_DAYS unset");
    });
  });
}
