import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Engine, testEngines } from "@agentpass/db/testing";
import { type Kysely, sql } from "kysely";
import { DEFAULT_RETENTION, loadConfig } from "../src/config.ts";
import { revokeKey } from "../src/domain/credentials.ts";
import { PERSONAL_TABLES } from "../src/store/personal-data.ts";
import { purgeExpired } from "../src/store/purge.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { runAdminCli } from "./support/run-cli.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const DAY = 24 * 60 * 60 * 1000;
const REVOKED = { error: "Partner key has been revoked", code: "partner_key_revoked" };

for (const engine of testEngines()) {
  describe(`data lifecycle (${engine})`, () => {
    let mailbox: Mailbox;
    let identity: TestIdentity;
    /** Every secret the tests saw: none may be in an export. */
    const secrets: string[] = [];

    before(async () => {
      mailbox = await startMailbox();
      identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
    });
    after(async () => {
      await identity.close();
      await mailbox.close();
    });

    const cli = async (...args: string[]) => {
      const run = await runAdminCli(args, identity.env);
      assert.equal(run.code, 0, `${args.join(" ")}: ${run.stderr}`);
      return run.stdout.trim();
    };
    const verifyWith = async (partnerKey: string, sessionToken: string) => {
      const response = await identity.verify(
        `Bearer ${partnerKey}`,
        JSON.stringify({ sessionToken }),
      );
      return { status: response.status, body: await response.json() };
    };

    /** Signs a new browser in as `email` by the mailed code; the browser is remembered. */
    async function signIn(email: string): Promise<WebClient> {
      const client = webClient(identity.service);
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      const { code, link } = signInSecrets(await mailbox.next(email, since));
      secrets.push(code, link);
      const signedIn = await client.post("/sign-in/code", { code, next: "/keys" });
      assert.equal(signedIn.status, 303, "the code signs in");
      secrets.push(...client.jar.values());
      return client;
    }

    /**
     * A person who used everything that keeps a row about them: a remembered browser and a
     * session, a sign-in code asked and not used, a key made by hand, a partner of their own
     * with a key, a resource URL and usage, another partner that verified their token, a device
     * login and an OAuth code.
     */
    async function busyPerson() {
      const email = `busy-${crypto.randomUUID()}@example.com`;
      const browser = await signIn(email);
      const other = webClient(identity.service);
      const since = mailbox.mails.length;
      assert.equal((await other.post("/sign-in", { email })).status, 303);
      secrets.push(...Object.values(signInSecrets(await mailbox.next(email, since))));
      const page = await (
        await browser.follow(await browser.post("/keys", { name: "laptop" }))
      ).text();
      const userKey = /id="new-key" class="secret">(apu_[A-Za-z0-9]+)</.exec(page)?.[1];
      assert.ok(userKey);
      secrets.push(userKey);

      const partnerId = await cli("partners", "create", "--name", "Busy Notes", "--owner", email);
      const ownKey = await cli("partner-keys", "create", partnerId);
      await cli("partner-resources", "add", partnerId, `https://busy-${partnerId}.example/mcp`);
      const elsewhere = await identity.partner();
      secrets.push(ownKey, elsewhere.key);
      for (const key of [ownKey, elsewhere.key]) {
        const token = await identity.token(userKey);
        secrets.push(token);
        assert.equal((await verifyWith(key, token)).status, 200);
      }
      await identity.ctx.usage.flush();

      const { id: accountId } = (await identity.ctx.store.findAccountByEmail(email)) ?? {};
      assert.ok(accountId);
      const now = identity.now();
      await identity.db
        .insertInto("device_codes")
        .values({
          device_hash: `device-${accountId}`,
          user_code: `device-${accountId}`,
          user_code_hash: `code-${accountId}`,
          client_name: "a terminal",
          client_address: "198.51.100.4",
          status: "approved",
          account_id: accountId,
          created_at: now,
          expires_at: now + 600_000,
          last_polled_at: null,
        })
        .execute();
      await identity.db
        .insertInto("oauth_codes")
        .values({
          code_hash: `oauth-${accountId}`,
          client_id: "https://client.example/metadata.json",
          account_id: accountId,
          redirect_uri: "https://client.example/callback",
          code_challenge: "challenge",
          partner_id: null,
          scope: null,
          expires_at: now + 60_000,
          used_at: null,
          key_id: null,
          client_name: "Client",
        })
        .execute();
      // An approved agent under a host of the person's, seen by their partner.
      await identity.db
        .insertInto("agent_hosts")
        .values({
          id: `hst_${accountId}`,
          account_id: accountId,
          name: "a laptop",
          thumbprint: `host-${accountId}`,
          public_jwk: JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "host" }),
          status: "active",
          created_at: now,
          updated_at: now,
          last_used_at: now,
          revoked_at: null,
        })
        .execute();
      await identity.db
        .insertInto("agents")
        .values({
          id: `agt_${accountId}`,
          host_id: `hst_${accountId}`,
          account_id: accountId,
          name: "an agent",
          thumbprint: `agent-${accountId}`,
          public_jwk: JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "agent" }),
          status: "active",
          created_at: now,
          activated_at: now,
          last_used_at: now,
          revoked_at: null,
        })
        .execute();
      await identity.db
        .insertInto("agent_activity")
        .values({
          agent_id: `agt_${accountId}`,
          partner_id: partnerId,
          first_at: now,
          last_at: now,
          count: 1,
        })
        .execute();
      // A capability the person's partner offers, and the agent's grant of it.
      await identity.db
        .insertInto("partner_capabilities")
        .values({
          name: `cap_${accountId.replaceAll("-", "_")}`,
          partner_id: partnerId,
          description: "A capability",
          location: "https://partner.example/agent/execute",
          input_schema: null,
          output_schema: null,
          updated_at: now,
        })
        .execute();
      await identity.db
        .insertInto("agent_grants")
        .values({
          agent_id: `agt_${accountId}`,
          capability: `cap_${accountId.replaceAll("-", "_")}`,
          status: "active",
          constraints: null,
          reason: null,
          created_at: now,
          updated_at: now,
        })
        .execute();
      return { email, accountId, browser, partnerId, userKey };
    }

    it("exports everything held about a person as JSON, without a secret or a hash", async () => {
      const person = await busyPerson();
      const exported = JSON.parse(await cli("accounts", "export", person.email)) as Record<
        string,
        unknown[]
      > & { account: { id: string; email: string; created_at: string } };
      assert.deepEqual(
        [exported.account.id, exported.account.email],
        [person.accountId, person.email],
      );
      assert.match(exported.account.created_at, /^\d{4}-\d\d-\d\dT/, "times in ISO 8601");
      // Every section personal-data.ts names, and nothing else; each holds this person's rows
      // but those of a connected app and a deleted partner, which they have none of.
      const sections: string[] = Object.values(PERSONAL_TABLES).flatMap(
        (table) => table.exportedIn,
      );
      assert.deepEqual(
        Object.keys(exported).sort(),
        [...new Set(["exportedAt", ...sections])].sort(),
      );
      for (const section of sections) {
        if (["account", "grants", "departed_partner_activity"].includes(section)) continue;
        assert.ok((exported[section]?.length ?? 0) > 0, `the export holds ${section}`);
      }
      assert.equal(exported.partner_activity?.length, 2, "both partners that saw the email");
      const text = JSON.stringify(exported);
      for (const secret of secrets) assert.ok(!text.includes(secret), "no secret in an export");
      assert.doesNotMatch(text, /_hash"|site_token|secret/, "no hash column in an export");

      const [event] = JSON.parse(
        await cli("audit", "--json", "--account", person.email, "--action", "account.export"),
      ) as { actorKind: string }[];
      assert.equal(event?.actorKind, "admin", "the export is in the audit log");
    });

    it("exports a verification made just before it, which the serving instance still holds in memory", async () => {
      const person = await identity.account();
      const user = await identity.userKey(person.id);
      const partner = await identity.partner();
      const token = await identity.token(user.key);
      assert.equal((await verifyWith(partner.key, token)).status, 200);
      // No flush: the serving instance writes its counts every few seconds, and the export runs
      // in a process of its own, as an operator's does.
      const exported = JSON.parse(await cli("accounts", "export", person.email)) as {
        partner_activity: { partner_id: string; count: number }[];
      };
      assert.deepEqual(
        exported.partner_activity.map(({ partner_id, count }) => ({ partner_id, count })),
        [{ partner_id: partner.id, count: 1 }],
      );
    });

    it("deletes every row that names a person, but the audit events the docs keep", async () => {
      const person = await busyPerson();
      const before = await rowsNaming(engine, identity.db, [
        person.email,
        person.accountId,
        person.partnerId,
      ]);
      // The scan sees the person where they are: each table the person left a row in.
      const tables = ["accounts", "remembered_browsers", "sign_in_codes", "oauth_codes"];
      for (const table of [...tables, "partner_resources"]) {
        assert.ok(before.includes(table), `${table} names the person before: ${before}`);
      }
      assert.equal(await cli("accounts", "delete", person.email), `deleted ${person.email}`);
      // Kept, as docs/operations.md says: the audit events (personal-data.ts), and the key change
      // log's entries for the account (its id, for an hour, so every instance drops its cached
      // reads).
      const kept = Object.entries(PERSONAL_TABLES)
        .filter(([, table]) => table.deletion.kind === "kept")
        .map(([name]) => name);
      assert.deepEqual(kept, ["audit_events"]);
      const naming = [person.email, person.accountId, person.partnerId];
      const left = await rowsNaming(engine, identity.db, naming);
      assert.deepEqual(left, [...kept, "key_changes"], "only what the docs keep is left");
      const byEmail = await rowsNaming(engine, identity.db, [person.email]);
      assert.deepEqual(byEmail, [], "and they name the account by its id, never by its email");
      const shown = await runAdminCli(["accounts", "show", person.email], identity.env);
      assert.equal(shown.code, 1);
      assert.match(shown.stderr, /No account for/);
    });

    it("a suspended partner's keys answer 403 from the next request, until it is reinstated", async () => {
      const owner = await identity.account();
      const partnerId = await cli(
        "partners",
        ...["create", "--name", "Suspect", "--owner", owner.email, "--listed"],
      );
      const partnerKey = await cli("partner-keys", "create", partnerId);
      const { key: userKey } = await identity.userKey();
      const listed = async () =>
        (
          (await (await identity.app.request("/api/partners")).json()) as {
            partners: { id: string }[];
          }
        ).partners.some((entry) => entry.id === partnerId);
      assert.equal((await verifyWith(partnerKey, await identity.token(userKey))).status, 200);
      assert.equal(await listed(), true);

      // Another process suspends it: this instance's cached read of the key must not outlive it.
      assert.equal(await cli("partners", "suspend", partnerId), "suspended");
      const refused = await verifyWith(partnerKey, await identity.token(userKey));
      assert.deepEqual([refused.status, refused.body], [403, REVOKED]);
      assert.equal(await listed(), false, "the directory stops listing it");
      const made = await cli("partner-keys", "create", partnerId);
      const refusedToo = await verifyWith(made, await identity.token(userKey));
      assert.equal(refusedToo.status, 403, "a key made while suspended is suspended with it");
      const [row] = JSON.parse(await cli("partners", "list", "--json")) as {
        id: string;
        suspendedAt: string | null;
      }[];
      assert.equal(row?.id, partnerId, "newest first");
      assert.match(row?.suspendedAt ?? "", /^\d{4}-\d\d-\d\dT/, "suspended, and when");
      assert.equal(await cli("partners", "suspend", partnerId), "already suspended");

      assert.equal(await cli("partners", "reinstate", partnerId), "reinstated");
      for (const key of [partnerKey, made]) {
        assert.equal((await verifyWith(key, await identity.token(userKey))).status, 200);
      }
      assert.equal(await listed(), true);
      const actions = (
        JSON.parse(await cli("audit", "--json", "--account", owner.email)) as { action: string }[]
      ).map((event) => event.action);
      assert.ok(actions.includes("partner.suspend") && actions.includes("partner.reinstate"));
    });

    it("deletes a partner, and its resource URL is free for another partner", async () => {
      const owner = await identity.account();
      const create = (name: string) =>
        cli("partners", "create", "--name", name, "--owner", owner.email);
      const first = await create("Leaving");
      const url = `https://leaving-${first}.example/mcp`;
      await cli("partner-resources", "add", first, url);
      assert.equal(await cli("partners", "delete", first), "deleted");
      const left = await identity.db
        .selectFrom("partner_resources")
        .select("url")
        .where("partner_id", "=", first)
        .execute();
      assert.deepEqual(left, [], "the deleted partner's resource URLs go with it");
      const second = await create("Arriving");
      await cli("partner-resources", "add", second, url);
      assert.match(await cli("partner-resources", "list", second), new RegExp(url));
    });

    it("lists accounts and partners, and records a refused change", async () => {
      const owner = await identity.account();
      const partnerId = await cli("partners", "create", "--name", "Listed", "--owner", owner.email);
      const accounts = JSON.parse(await cli("accounts", "list", "--json", "--limit", "1000")) as {
        email: string;
        partners: number;
      }[];
      assert.equal(accounts.find((account) => account.email === owner.email)?.partners, 1);
      assert.match(
        await cli("partners", "list"),
        new RegExp(`${partnerId}  "Listed"  owner ${owner.email}`),
      );
      assert.match(await cli("accounts", "show", owner.email), /partners: 1/);

      const missing = crypto.randomUUID();
      const refused = await runAdminCli(["partners", "suspend", missing], identity.env);
      assert.deepEqual(
        [refused.code, refused.stderr.trim()],
        [1, "agentpass-server: No such partner"],
      );
      const [event] = JSON.parse(await cli("audit", "--json", "--action", "partner.suspend")) as {
        outcome: string;
        actorKind: string;
        detail: { reason: string };
      }[];
      assert.deepEqual(
        [event?.outcome, event?.actorKind, event?.detail.reason],
        ["failure", "admin", "No such partner"],
      );
      const badLimit = await runAdminCli(["accounts", "list", "--limit", "0"], identity.env);
      assert.equal(badLimit.code, 1);
      assert.match(badLimit.stderr, /--limit must be a whole number/);
    });

    it("purges what is past its retention, and keeps what is not", async () => {
      const { key: userKey, id: userKeyId } = await identity.userKey();
      const partner = await identity.partner();
      assert.equal((await verifyWith(partner.key, await identity.token(userKey))).status, 200);
      await identity.ctx.usage.flush();
      // On the service's clock, which the purges below are run against.
      const revoked = await identity.userKey();
      assert.ok((await revokeKey(identity.ctx, "user", revoked.id)).ok);
      const firstSealer = identity.ctx.sealingKeys.current.id;
      assert.ok((await identity.ctx.sealingKeys.rotate()).ok);

      const at = (days: number) => identity.now() + days * DAY;
      const count = async (table: keyof IdentityDatabase, where = sql`1 = 1`) => {
        const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n
          FROM ${sql.table(table)} WHERE ${where}`.execute(identity.db);
        return Number(rows[0]?.n);
      };
      const ofPartner = sql`partner_id = ${partner.id}`;
      assert.equal(await count("usage_daily", ofPartner), 1);

      // A day short of every retention but the sealing keys': only the retired sealing key goes.
      const early = await purgeExpired(identity.service.database, at(31));
      assert.equal(early.sealing_keys, 1);
      assert.equal(early.user_keys, 0);
      const ids = (await identity.db.selectFrom("sealing_keys").select("id").execute()).map(
        (row) => row.id,
      );
      assert.ok(!ids.includes(firstSealer) && ids.length === 1, "the newest key stays");

      const late = await purgeExpired(identity.service.database, at(401));
      assert.equal(late.user_keys, 1, "the revoked key");
      assert.equal(await count("user_keys", sql`id = ${userKeyId}`), 1, "the active key stays");
      assert.equal(await count("usage_daily", ofPartner), 0);
      assert.equal(await count("partner_activity", ofPartner), 0);

      // Each retention is its own setting.
      const loaded = loadConfig({ USAGE_RETENTION_DAYS: "7", SEALING_KEY_RETENTION_DAYS: "2" });
      assert.ok(loaded.ok);
      assert.deepEqual(loaded.config.retention, {
        ...DEFAULT_RETENTION,
        usageDays: 7,
        sealingKeyDays: 2,
      });
      const refused = loadConfig({ REVOKED_KEY_RETENTION_DAYS: "0" });
      assert.ok(!refused.ok);
      assert.match(refused.error, /REVOKED_KEY_RETENTION_DAYS/);
    });
  });
}

/**
 * The tables with a row where some text column contains one of `needles`: every table of
 * the schema and every text column, so a table added later is covered without naming it here.
 */
async function rowsNaming(
  engine: Engine,
  db: Kysely<IdentityDatabase>,
  needles: string[],
): Promise<string[]> {
  const columns =
    engine === "sqlite"
      ? (
          await sql<{ table_name: string; column_name: string }>`SELECT m.name AS table_name,
              c.name AS column_name
            FROM sqlite_master m, pragma_table_info(m.name) c
            WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE 'kysely_%'
              AND upper(c.type) = 'TEXT'`.execute(db)
        ).rows
      : (
          await sql<{ table_name: string; column_name: string }>`SELECT table_name, column_name
            FROM information_schema.columns
            WHERE table_schema = current_schema() AND data_type = 'text'
              AND table_name NOT LIKE 'kysely_%'`.execute(db)
        ).rows;
  const found = new Set<string>();
  for (const { table_name, column_name } of columns) {
    const column = sql.ref(column_name);
    const holds = needles.map((needle) =>
      engine === "sqlite"
        ? sql`instr(${column}, ${needle}) > 0`
        : sql`strpos(${column}, ${needle}) > 0`,
    );
    const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n
      FROM ${sql.table(table_name)} WHERE ${sql.join(holds, sql` OR `)}`.execute(db);
    if (Number(rows[0]?.n) > 0) found.add(table_name);
  }
  return [...found].sort();
}
