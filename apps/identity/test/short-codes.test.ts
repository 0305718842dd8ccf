import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { migrateToLatest, openDatabase } from "@agentpass/db";
import { createTestDatabase, testEngines } from "@agentpass/db/testing";
import { keyedHash, sha256 } from "../src/infra/crypto.ts";
import { identityMigrations } from "../src/store/migrations.ts";
import type { IdentityDatabase } from "../src/store/schema.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

/**
 * Issue 43, item 5: a short code (a 6-digit sign-in code, an 8-letter device user code) is stored
 * as an HMAC under a key derived from AGENTPASS_SECRET, which is not in the database. Whoever
 * reads a row (a replica, a backup, an injected SELECT) and runs our code under any secret of
 * their own gets nothing they can type.
 */
for (const engine of testEngines()) {
  describe(`a copy of the database holds no short code (${engine})`, () => {
    let identity: TestIdentity;
    /** The same code under another secret: what whoever copied the database can run. */
    let elsewhere: TestIdentity;
    let mailbox: Mailbox;

    before(async () => {
      mailbox = await startMailbox();
      identity = await openTestIdentity(engine, {
        SMTP_URL: mailbox.url,
        AGENTPASS_SECRET: randomBytes(32).toString("base64url"),
      });
      elsewhere = await openTestIdentity(engine, {
        AGENTPASS_SECRET: randomBytes(32).toString("base64url"),
      });
    });
    after(async () => {
      await identity.close();
      await elsewhere.close();
      await mailbox.close();
    });

    async function askCode(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      return signInSecrets(await mailbox.next(email, since));
    }

    async function signedIn(): Promise<WebClient> {
      const client = webClient(identity.app);
      const { code } = await askCode(client, `person-${crypto.randomUUID()}@example.com`);
      assert.equal((await client.post("/sign-in/code", { code, next: "/keys" })).status, 303);
      return client;
    }

    const startDeviceLogin = async () => {
      const response = await identity.app.request("/api/device/code", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "laptop" }),
      });
      assert.equal(response.status, 200);
      return (await response.json()) as { user_code: string; device_code: string };
    };

    it("yields no sign-in code: none of the 1,000,000 codes hashes to the row, under SHA-256 or another secret's key", async () => {
      const email = `victim-${crypto.randomUUID()}@example.com`;
      const victim = webClient(identity.app);
      const { code } = await askCode(victim, email);
      const row = await identity.db
        .selectFrom("sign_in_codes")
        .selectAll()
        .where("email", "=", email)
        .executeTakeFirstOrThrow();

      const otherKey = elsewhere.ctx.keys.shortCodes;
      const found: string[] = [];
      for (let n = 0; n < 1_000_000; n++) {
        // The service runs in this process: it must go on (close idle connections) meanwhile.
        if (n % 10_000 === 0) await new Promise((resolve) => setImmediate(resolve));
        const candidate = String(n).padStart(6, "0");
        if (
          sha256(candidate) === row.code_hash ||
          keyedHash(otherKey, candidate) === row.code_hash
        ) {
          found.push(candidate);
        }
      }
      assert.deepEqual(found, [], "the row gives the code away");
      assert.ok(!Object.values(row).includes(code), "the code is not kept in clear");

      assert.equal((await victim.post("/sign-in/code", { code, next: "/keys" })).status, 303);
      assert.equal((await victim.get("/keys")).status, 200, "its owner signs in with it");
    });

    it("yields no device user code: it is in no column, in clear or as a plain hash, and another secret's key does not match it", async () => {
      const { user_code: userCode, device_code: deviceCode } = await startDeviceLogin();
      const row = await identity.db
        .selectFrom("device_codes")
        .selectAll()
        .where("device_hash", "=", sha256(deviceCode))
        .executeTakeFirstOrThrow();
      const letters = userCode.replace("-", "");
      const giveaways = [
        userCode,
        letters,
        sha256(userCode),
        sha256(letters),
        keyedHash(elsewhere.ctx.keys.shortCodes, userCode),
        keyedHash(elsewhere.ctx.keys.shortCodes, letters),
      ];
      for (const [column, value] of Object.entries(row)) {
        for (const giveaway of giveaways) {
          assert.ok(
            !String(value).toUpperCase().includes(giveaway.toUpperCase()),
            `device_codes.${column} gives the code away`,
          );
        }
      }
    });

    it("approves a device login from the code typed, and shows the person the code they typed", async () => {
      const { user_code: userCode, device_code: deviceCode } = await startDeviceLogin();
      const person = await signedIn();
      const typed = userCode.toLowerCase().replace("-", " ");
      const page = await (await person.submit("/device", { code: typed })).text();
      assert.match(page, new RegExp(`<code id="device-code">${userCode}</code>`));
      const approved = await person.submit("/device", { code: userCode, decision: "approve" });
      assert.match(await approved.text(), /<p class="ok" role="status">Approved\./);
      const row = await identity.db
        .selectFrom("device_codes")
        .select(["status", "account_id"])
        .where("device_hash", "=", sha256(deviceCode))
        .executeTakeFirstOrThrow();
      assert.equal(row.status, "approved");

      identity.advance(5000);
      const granted = await identity.app.request("/api/device/token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          grant_type: "urn:ietf:params:oauth:grant-type:device_code",
          device_code: deviceCode,
        }),
      });
      assert.equal(granted.status, 200, "the device gets its key");
    });
  });

  describe(`migration 0012 ends the short codes it cannot key (${engine})`, () => {
    it("deletes every sign-in code and pending device login, keeps the decided ones, and leaves no code in clear", async () => {
      const database = await createTestDatabase(engine);
      const opened = () =>
        openDatabase<IdentityDatabase>({
          databaseUrl: database.databaseUrl,
          dataDir: database.dataDir,
          fileName: "identity.sqlite",
        });
      try {
        const old = opened();
        const all = identityMigrations(engine);
        const before0012 = Object.entries(all).filter(([name]) => name < "0012");
        await migrateToLatest(old.db, "identity", Object.fromEntries(before0012));
        const now = Date.now();
        for (const [id, usedAt] of [
          ["pending", null],
          ["used", now],
        ] as const) {
          await old.db
            .insertInto("sign_in_codes")
            .values({
              id,
              email: `${id}@example.com`,
              code_hash: sha256("123456"),
              link_hash: `link-${id}`,
              browser_hash: "browser",
              attempts: 0,
              created_at: now,
              expires_at: now + 600_000,
              used_at: usedAt,
            })
            .execute();
        }
        for (const [deviceHash, userCode, status] of [
          ["pending-device", "BCDF-GHJK", "pending"],
          ["approved-device", "LMNP-QRST", "approved"],
        ] as const) {
          await old.db
            .insertInto("device_codes")
            .values({
              device_hash: deviceHash,
              user_code: userCode,
              client_name: "laptop",
              client_address: null,
              status,
              account_id: null,
              created_at: now,
              expires_at: now + 600_000,
              last_polled_at: null,
            })
            .execute();
        }
        await old.close();

        const migrated = opened();
        try {
          const report = await migrateToLatest(migrated.db, "identity", all);
          assert.ok(report.applied.includes("0012_short_code_hmac"));
          const codes = await migrated.db.selectFrom("sign_in_codes").select("id").execute();
          assert.deepEqual(codes, []);
          const devices = await migrated.db
            .selectFrom("device_codes")
            .select(["device_hash", "user_code", "user_code_hash", "status"])
            .execute();
          assert.deepEqual(devices, [
            {
              device_hash: "approved-device",
              user_code: "approved-device",
              user_code_hash: null,
              status: "approved",
            },
          ]);
        } finally {
          await migrated.close();
        }
      } finally {
        await database.drop();
      }
    });
  });
}
