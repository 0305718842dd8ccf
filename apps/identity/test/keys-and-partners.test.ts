import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { formatTime } from "../src/http/web/page.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const MINUTE = 60_000;
const NEW_KEY = /id="new-key" class="secret">(ap[uk]_[A-Za-z0-9]+)</;

for (const engine of testEngines()) {
  describe(`managing keys and partners (${engine})`, () => {
    let identity: TestIdentity;
    let mailbox: Mailbox;

    before(async () => {
      mailbox = await startMailbox();
      identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
    });
    after(async () => {
      await identity.close();
      await mailbox.close();
    });
    // Sign-in codes are rate-limited per client address: every test starts in a fresh window.
    beforeEach(async () => {
      identity.advance(15 * MINUTE);
      if (engine === "postgres") await identity.db.deleteFrom("rate_limits").execute();
    });

    async function signedIn(): Promise<WebClient> {
      const client = webClient(identity.app);
      const email = `person-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await client.post("/sign-in/code", { code })).status, 303);
      return client;
    }

    /** Creates a key on the page at `keysPath`; returns its id and secret. */
    async function createKey(client: WebClient, keysPath: string, name: string) {
      const page = await (await client.submit(keysPath, { name })).text();
      const key = NEW_KEY.exec(page)?.[1] ?? "";
      const id = new RegExp(`<tr data-key="([^"]+)">\\s*<td>${name}</td>`).exec(page)?.[1] ?? "";
      assert.ok(key && id, `key ${name} created`);
      return { id, key };
    }

    async function createPartner(client: WebClient, fields: Record<string, string> = {}) {
      const created = await client.post("/partners", { name: "Weather API", ...fields });
      const path = created.headers.get("location") ?? "";
      return { path, id: path.split("/").at(-1) ?? "" };
    }

    const verify = (partnerKey: string, sessionToken: string) =>
      identity.verify(`Bearer ${partnerKey}`, JSON.stringify({ sessionToken }));

    /** The live keys' table and the folded revoked keys of a page, apart. */
    function keyListsOf(page: string) {
      const live = /<table id="live-keys">.*?<\/table>/s.exec(page)?.[0] ?? "";
      const revoked = /<details id="revoked-keys">.*?<\/details>/s.exec(page)?.[0] ?? "";
      return { live, revoked };
    }

    describe("renaming a key", () => {
      it("renames a user key under the rules of a new key's name; the key keeps working", async () => {
        const client = await signedIn();
        const { id, key } = await createKey(client, "/keys", "laptop");
        const form = await client.text(`/keys/${id}/rename`);
        assert.match(
          form,
          /<input id="key-new-name" name="name" type="text" required maxlength="100" value="laptop"/,
        );

        const renamed = await client.post(`/keys/${id}/rename`, { name: "  work laptop  " });
        assert.equal(renamed.status, 303);
        assert.equal(renamed.headers.get("location"), "/keys");
        const page = await (await client.follow(renamed)).text();
        assert.match(
          page,
          /<p class="ok" role="status">Key laptop is now called work laptop\.<\/p>/,
        );
        assert.match(keyListsOf(page).live, /<td>work laptop<\/td>/);
        assert.equal((await identity.mint(key)).status, 201);

        for (const name of [" ", "x".repeat(101), "tab\there", "nul\u0000", "del\u007f"]) {
          const refused = await client.post(`/keys/${id}/rename`, { name });
          assert.equal(refused.status, 400, JSON.stringify(name));
          assert.match(await refused.text(), /Give the key a name of 1 to 100 characters\./);
        }
        assert.match(keyListsOf(await client.text("/keys")).live, /<td>work laptop<\/td>/);
      });

      it("renames a partner key; verifications with it go on", async () => {
        const client = await signedIn();
        const partner = await createPartner(client);
        const { id, key } = await createKey(client, `${partner.path}/keys`, "production");
        const renamed = await client.post(`${partner.path}/keys/${id}/rename`, { name: "live" });
        assert.equal(renamed.status, 303);
        assert.equal(renamed.headers.get("location"), partner.path);
        const page = await (await client.follow(renamed)).text();
        assert.match(page, /Partner key production is now called live\./);
        assert.match(keyListsOf(page).live, /<td>live<\/td>/);
        const userKey = (await identity.userKey()).key;
        assert.equal((await verify(key, await identity.token(userKey))).status, 200);
      });

      it("answers 404, never 500, for a key that is not there or not of this owner", async () => {
        const client = await signedIn();
        const partner = await createPartner(client);
        const userKey = await createKey(client, "/keys", "laptop");
        const paths = [
          "/keys/nope/rename",
          "/keys/00000000-0000-0000-0000-000000000000/rename",
          `${partner.path}/keys/${userKey.id}/rename`,
          `/partners/nope/keys/${userKey.id}/rename`,
          `/keys/${"x".repeat(2000)}/revoke`,
          "/keys/%00/revoke",
          "/partners/%00",
          "/partners/%00/delete",
          "/partners/%00/keys/%00/rename",
        ];
        for (const path of paths) {
          assert.equal((await client.get(path)).status, 404, `GET ${path}`);
          assert.equal((await client.post(path, { name: "x" })).status, 404, `POST ${path}`);
        }
      });
    });

    describe("revoked keys", () => {
      it("folds revoked keys away below the live ones, each with when it was last used and revoked", async () => {
        const client = await signedIn();
        const used = await createKey(client, "/keys", "old laptop");
        await createKey(client, "/keys", "desktop");
        assert.equal((await identity.mint(used.key)).status, 201);
        const usedAt = identity.now();
        identity.advance(MINUTE);
        await client.post(`/keys/${used.id}/revoke`, { confirm: "yes" });

        const { live, revoked } = keyListsOf(await client.text("/keys"));
        assert.match(live, /<td>desktop<\/td>/);
        assert.doesNotMatch(live, /old laptop/);
        assert.match(revoked, /<summary>Revoked keys \(1\)<\/summary>/);
        assert.match(revoked, /<td>old laptop<\/td>/);
        assert.match(
          revoked,
          new RegExp(`<td>${formatTime(usedAt)}</td><td>${formatTime(identity.now())}</td>`),
        );
        assert.doesNotMatch(revoked, /rename/, "a revoked key has no actions");
      });

      it("says there are no live keys when every key is revoked, and nothing of revoked keys when none is", async () => {
        const client = await signedIn();
        assert.doesNotMatch(await client.text("/keys"), /Revoked keys/);
        const { id } = await createKey(client, "/keys", "laptop");
        await client.post(`/keys/${id}/revoke`, { confirm: "yes" });
        const page = await client.text("/keys");
        assert.match(page, /<p class="empty">No live keys\.<\/p>/);
        assert.match(page, /Revoked keys \(1\)/);
      });

      it("shows when each key was last used, this instance's uses included", async () => {
        const client = await signedIn();
        const partner = await createPartner(client);
        const partnerKey = await createKey(client, `${partner.path}/keys`, "production");
        const userKey = await createKey(client, "/keys", "laptop");
        assert.match(
          keyListsOf(await client.text("/keys")).live,
          /<td>laptop<\/td>.*?<td>never<\/td>/s,
        );
        identity.advance(MINUTE);
        const token = await identity.token(userKey.key);
        assert.equal((await verify(partnerKey.key, token)).status, 200);
        const when = formatTime(identity.now());
        const keys = keyListsOf(await client.text("/keys")).live;
        assert.match(keys, new RegExp(`<td>laptop</td>.*?<td>${when}</td>`, "s"));
        const partnerKeys = keyListsOf(await client.text(partner.path)).live;
        assert.match(partnerKeys, new RegExp(`<td>production</td>.*?<td>${when}</td>`, "s"));
      });
    });

    describe("deleting a partner", () => {
      it("asks first, then deletes it: its keys stop verifying at once, its usage goes, and the directory drops it", async () => {
        const owner = await signedIn();
        const partner = await createPartner(owner, { name: "Tide Tables", listed: "yes" });
        const partnerKey = await createKey(owner, `${partner.path}/keys`, "production");
        const person = await signedIn();
        const userKey = await createKey(person, "/keys", "laptop");
        const token = await identity.token(userKey.key);
        assert.equal((await verify(partnerKey.key, token)).status, 200);
        await identity.ctx.usage.flush();
        const rowsOf = async (table: "usage_daily" | "partner_activity") =>
          (
            await identity.db
              .selectFrom(table)
              .select("partner_id")
              .where("partner_id", "=", partner.id)
              .execute()
          ).length;
        assert.equal(await rowsOf("usage_daily"), 1);
        assert.equal(await rowsOf("partner_activity"), 1);
        assert.equal((await verify(partnerKey.key, token)).status, 200, "counted, not yet written");

        const ask = await owner.text(`${partner.path}/delete`);
        assert.match(ask, /Delete this partner\?/);
        assert.match(ask, /<strong>Tide Tables<\/strong>/);
        const unconfirmed = await owner.post(`${partner.path}/delete`, {});
        assert.equal(unconfirmed.status, 303);
        assert.equal(unconfirmed.headers.get("location"), `${partner.path}/delete`);
        assert.ok(await identity.ctx.store.findPartner(partner.id), "asking is not deleting");

        const deleted = await owner.post(`${partner.path}/delete`, { confirm: "yes" });
        assert.equal(deleted.status, 303);
        assert.equal(deleted.headers.get("location"), "/partners");
        const list = await (await owner.follow(deleted)).text();
        assert.match(list, /<p class="ok" role="status">Partner Tide Tables deleted\.<\/p>/);
        assert.doesNotMatch(list, /href="\/partners\/[^"]+">Tide Tables/);

        assert.equal((await verify(partnerKey.key, token)).status, 401, "refused at once");
        await identity.ctx.usage.flush();
        assert.equal(await rowsOf("usage_daily"), 0);
        assert.equal(await rowsOf("partner_activity"), 0);
        assert.equal(await identity.ctx.store.findPartner(partner.id), undefined);
        const directory = (await (await identity.app.request("/api/partners")).json()) as {
          partners: { id: string }[];
        };
        assert.equal(
          directory.partners.find((listed) => listed.id === partner.id),
          undefined,
        );
        assert.doesNotMatch(await webClient(identity.app).text("/directory"), /Tide Tables/);
        assert.equal((await owner.get(partner.path)).status, 404);
        assert.equal((await owner.post(`${partner.path}/delete`, { confirm: "yes" })).status, 404);
        assert.equal((await identity.mint(userKey.key)).status, 201, "people's keys stay");
      });

      it("deletes only a partner of the signed-in account", async () => {
        const owner = await signedIn();
        const partner = await createPartner(owner);
        const stranger = await signedIn();
        assert.equal((await stranger.get(`${partner.path}/delete`)).status, 404);
        const refused = await stranger.post(`${partner.path}/delete`, { confirm: "yes" });
        assert.equal(refused.status, 404);
        assert.ok(await identity.ctx.store.findPartner(partner.id));
      });
    });
    describe("a partner's OAuth resources", () => {
      it("registers resource URLs, refuses a bad or taken one, removes one, and frees them on delete", async () => {
        const client = await signedIn();
        const partner = await createPartner(client);
        const added = await client.post(`${partner.path}/resources`, {
          url: "https://weather.example/mcp",
        });
        assert.equal(added.status, 303);
        const page = await (await client.follow(added)).text();
        assert.match(page, /<code>https:\/\/weather\.example\/mcp<\/code>/);
        assert.match(page, /Resource added\./);
        for (const url of ["http://weather.example/api", "https://weather.example/a#b", "nope"]) {
          const refused = await client.post(`${partner.path}/resources`, { url });
          assert.equal(refused.status, 400, url);
          assert.match(await refused.text(), /A resource is an https URL/);
        }
        const otherClient = await signedIn();
        const takenBy = await createPartner(otherClient, { name: "Impostor" });
        const taken = await otherClient.post(`${takenBy.path}/resources`, {
          url: "https://weather.example/mcp",
        });
        assert.equal(taken.status, 400);
        assert.match(await taken.text(), /Another partner already answers for that URL/);
        assert.equal(
          await identity.ctx.oauth.partnerOfResource("https://weather.example/mcp"),
          partner.id,
        );

        await client.post(`${partner.path}/resources`, { url: "https://weather.example/api" });
        const removed = await client.post(`${partner.path}/resources/remove`, {
          url: "https://weather.example/api",
        });
        assert.equal(removed.status, 303);
        assert.equal(
          await identity.ctx.oauth.partnerOfResource("https://weather.example/api"),
          undefined,
        );

        assert.equal((await client.post(`${partner.path}/delete`, { confirm: "yes" })).status, 303);
        assert.equal(
          await identity.ctx.oauth.partnerOfResource("https://weather.example/mcp"),
          undefined,
        );
      });
    });
  });
}
