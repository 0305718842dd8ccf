import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { deriveFlashKey, openFlash, sealFlash } from "../src/infra/crypto.ts";
import { deriveKeyEncryptionKey } from "../src/infra/sealed-tokens.ts";
import { openIdentityService } from "../src/service.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const MINUTE = 60_000;
const NEW_KEY = /id="new-key" class="secret">(ap[uk]_[A-Za-z0-9]+)</;

/** The `Set-Cookie` of the flash an answer leaves, if any. */
function flashCookieOf(response: Response): string | undefined {
  return response.headers.getSetCookie().find((cookie) => /agentpass_flash=[^;]/.test(cookie));
}

for (const engine of testEngines()) {
  describe(`form posts answer 303 to a page (${engine})`, () => {
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

    async function signIn(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await client.post("/sign-in/code", { code })).status, 303);
    }

    async function signedIn(app = identity.app, base?: string): Promise<WebClient> {
      const client = webClient(app, base);
      await signIn(client, `person-${crypto.randomUUID()}@example.com`);
      return client;
    }

    async function keysOf(client: WebClient) {
      const page = await client.text("/keys");
      return [...page.matchAll(/<tr data-key="([^"]+)"/g)].map((match) => match[1] ?? "");
    }

    it("answers every form post that did what it asked with 303 to a page that answers 200", async () => {
      const client = await signedIn();
      const partnerPath =
        (await client.post("/partners", { name: "Tides" })).headers.get("location") ?? "";
      const created = await client.post("/keys", { name: "laptop" });
      await client.follow(created);
      const [keyId] = await keysOf(client);
      await client.submit(`${partnerPath}/keys`, { name: "server" });
      const partnerKeyId = /href="\/partners\/[^/]+\/keys\/([^/]+)\/revoke"/.exec(
        await client.text(partnerPath),
      )?.[1];
      const device = await identity.app.request("/api/device/code", { method: "POST" });
      const { user_code } = (await device.json()) as { user_code: string };

      const posts: [string, Record<string, string>, string][] = [
        ["/keys", { name: "desktop" }, "/keys"],
        [`/keys/${keyId}/rename`, { name: "old laptop" }, "/keys"],
        [`/keys/${keyId}/revoke`, {}, `/keys/${keyId}/revoke`],
        [`/keys/${keyId}/revoke`, { confirm: "yes" }, "/keys"],
        [partnerPath, { name: "Tide Tables" }, partnerPath],
        [`${partnerPath}/site-check`, {}, partnerPath],
        [`${partnerPath}/keys`, { name: "staging" }, partnerPath],
        [`${partnerPath}/keys/${partnerKeyId}/rename`, { name: "live" }, partnerPath],
        [`${partnerPath}/keys/${partnerKeyId}/revoke`, { confirm: "yes" }, partnerPath],
        ["/device", { code: user_code }, "/device"],
        ["/device", { code: user_code, decision: "deny" }, "/device"],
        [`${partnerPath}/delete`, {}, `${partnerPath}/delete`],
        [`${partnerPath}/delete`, { confirm: "yes" }, "/partners"],
        ["/partners", { name: "Moon Phases" }, ""],
        ["/account/delete", {}, "/account/delete"],
        ["/account/delete", { confirm: "yes" }, "/"],
      ];
      for (const [path, fields, location] of posts) {
        const response = await client.post(path, fields);
        assert.equal(response.status, 303, `POST ${path} ${JSON.stringify(fields)}`);
        const target = response.headers.get("location") ?? "";
        if (location) assert.equal(target, location, `POST ${path}`);
        assert.equal((await client.follow(response)).status, 200, `GET ${target}`);
      }
    });

    it("shows a new key once: reloading the page shows it no more and makes no second key", async () => {
      const client = await signedIn();
      const created = await client.post("/keys", { name: "laptop" });
      assert.equal(created.status, 303);
      assert.equal(created.headers.get("location"), "/keys");
      assert.doesNotMatch(await created.text(), /apu_/, "the redirect itself holds no key");
      const key = NEW_KEY.exec(await (await client.follow(created)).text())?.[1];
      assert.match(key ?? "", /^apu_/);
      assert.equal((await identity.mint(key ?? "")).status, 201);

      const reloaded = await client.text("/keys");
      assert.doesNotMatch(reloaded, /id="new-key"/);
      assert.ok(!reloaded.includes(key ?? "-"), "the secret is not on the page again");
      assert.equal((await keysOf(client)).length, 1);
    });

    it("carries the key sealed in an HttpOnly, SameSite=Lax cookie for the one page, for 60 s", async () => {
      const client = await signedIn();
      const created = await client.post("/keys", { name: "laptop" });
      const cookie = flashCookieOf(created) ?? "";
      assert.match(cookie, /^agentpass_flash=f1\.[A-Za-z0-9_-]+;/);
      assert.match(cookie, /; Max-Age=60(;|$)/);
      assert.match(cookie, /; Path=\/keys(;|$)/);
      assert.match(cookie, /; HttpOnly/);
      assert.match(cookie, /; SameSite=Lax/);
      assert.doesNotMatch(cookie, /Secure/, "plain http on localhost cannot hold a Secure cookie");
      const key = NEW_KEY.exec(await (await client.follow(created)).text())?.[1] ?? "";
      assert.ok(!cookie.includes(key) && !cookie.includes(key.slice(4, 16)), "not in clear");
      assert.ok(!cookie.includes(Buffer.from(key).toString("base64url").slice(0, 16)));

      const shown = await client.get("/keys");
      assert.equal(flashCookieOf(shown), undefined);
      const partnerPath =
        (await client.post("/partners", { name: "Tides" })).headers.get("location") ?? "";
      const partnerKey = await client.post(`${partnerPath}/keys`, { name: "server" });
      assert.match(flashCookieOf(partnerKey) ?? "", new RegExp(`; Path=${partnerPath}(;|$)`));
    });

    it("clears the flash cookie on the page that shows it", async () => {
      const client = await signedIn();
      await client.post("/keys", { name: "laptop" });
      const shown = await client.get("/keys");
      const cleared = shown.headers
        .getSetCookie()
        .find((cookie) => cookie.startsWith("agentpass_flash="));
      assert.match(cleared ?? "", /^agentpass_flash=; Max-Age=0; Path=\/keys;/);
    });

    it("uses a __Secure- prefixed Secure flash cookie when the public URL is https", async () => {
      const secure = await openTestIdentity(engine, {
        PUBLIC_URL: "https://agentpass.example",
        SMTP_URL: mailbox.url,
      });
      try {
        const client = await signedIn(secure.app, "https://agentpass.example");
        const created = await client.post("/keys", { name: "laptop" });
        const cookie = flashCookieOf(created) ?? "";
        assert.match(cookie, /^__Secure-agentpass_flash=f1\./);
        assert.match(cookie, /; Secure/);
        assert.match(await (await client.follow(created)).text(), NEW_KEY);
      } finally {
        await secure.close();
      }
    });

    it("opens a flash only in the session it was left for", async () => {
      const email = `person-${crypto.randomUUID()}@example.com`;
      const client = webClient(identity.app);
      await signIn(client, email);
      const created = await client.post("/keys", { name: "laptop" });
      const sealed = client.jar.get("agentpass_flash") ?? "";
      assert.ok(sealed);

      const other = await signedIn();
      other.jar.set("agentpass_flash", sealed);
      const elsewhere = await other.text("/keys");
      assert.doesNotMatch(elsewhere, /id="new-key"/, "copied into another session, it opens not");
      assert.match(
        await (await client.follow(created)).text(),
        NEW_KEY,
        "its own session opens it",
      );

      // The same browser, signed in again: a new session, which the flash was not left for.
      await client.post("/keys", { name: "desktop" });
      await signIn(client, email);
      assert.doesNotMatch(await client.text("/keys"), /id="new-key"/);
    });

    it("forgets a flash 60 s after the post", async () => {
      const client = await signedIn();
      const late = await client.post("/keys", { name: "late" });
      identity.advance(MINUTE);
      assert.doesNotMatch(await (await client.follow(late)).text(), /id="new-key"/);

      const early = await client.post("/keys", { name: "early" });
      identity.advance(MINUTE - 1);
      assert.match(await (await client.follow(early)).text(), NEW_KEY);
    });

    it("ignores a flash cookie that was changed or made up, with 200", async () => {
      const client = await signedIn();
      await client.post("/keys", { name: "laptop" });
      const sealed = client.jar.get("agentpass_flash") ?? "";
      const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
      for (const value of [flipped, "", "f1.", "f1.!!!!", `f1.${"A".repeat(5000)}`, "v1.x", "%"]) {
        client.jar.set("agentpass_flash", value);
        const response = await client.get("/keys");
        assert.equal(response.status, 200, value.slice(0, 20));
        assert.doesNotMatch(await response.text(), /id="new-key"/, value.slice(0, 20));
      }
    });

    it("shows a key made on one instance on the page served by another with the same secret", async () => {
      const loaded = loadConfig({
        DATA_DIR: identity.database.dataDir,
        DATABASE_URL: identity.database.databaseUrl,
        SMTP_URL: mailbox.url,
        LOG_LEVEL: "silent",
      });
      assert.ok(loaded.ok);
      const second = await openIdentityService(loaded.config, { clock: identity.now });
      try {
        const client = await signedIn();
        const created = await client.post("/keys", { name: "laptop" });
        const there = webClient(second);
        for (const [name, value] of client.jar) there.jar.set(name, value);
        const page = await there.text(created.headers.get("location") ?? "");
        assert.match(page, NEW_KEY);
      } finally {
        await second.close();
      }
    });
  });
}

describe("sealed flash messages", () => {
  const key = deriveFlashKey("a secret of the service, at least 32 characters long");
  const flash = { text: '{"kind":"new-key"}', boundTo: "browser\nsession\n/keys", expiresAt: 1000 };

  it("opens with the same key and binding until it expires", () => {
    const sealed = sealFlash(key, flash);
    assert.equal(openFlash(key, sealed, flash.boundTo, 999), flash.text);
    assert.equal(openFlash(key, sealed, flash.boundTo, 1000), null, "expired at its expiry");
  });

  it("opens for no other binding, key or text", () => {
    const sealed = sealFlash(key, flash);
    assert.equal(openFlash(key, sealed, "browser\nother session\n/keys", 0), null);
    assert.equal(openFlash(key, sealed, "browser\nsession\n/partners", 0), null);
    const other = deriveFlashKey("another secret of the service, 32 characters or more");
    assert.equal(openFlash(other, sealed, flash.boundTo, 0), null);
    const body = Buffer.from(sealed.slice(3), "base64url");
    body[20] = (body[20] ?? 0) ^ 1;
    assert.equal(openFlash(key, `f1.${body.toString("base64url")}`, flash.boundTo, 0), null);
  });

  it("is sealed under a fresh nonce each time", () => {
    assert.notEqual(sealFlash(key, flash), sealFlash(key, flash));
  });

  it("derives the same key from the same secret, and not the key-encryption key", () => {
    const secret = "a secret of the service, at least 32 characters long";
    assert.deepEqual(deriveFlashKey(secret).export(), key.export());
    assert.notDeepEqual(deriveFlashKey(secret).export(), deriveKeyEncryptionKey(secret).export());
  });
});
