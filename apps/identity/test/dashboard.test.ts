import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from "jose";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const MINUTE = 60_000;

/** A DPoP key pair as a client keeps it (RFC 9449), with its RFC 7638 thumbprint. */
interface DpopKey {
  privateKey: CryptoKey;
  jwk: JWK;
  jkt: string;
}

async function dpopKey(): Promise<DpopKey> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/**
 * A proof by `key` for a request (`htm`, `htu`; `ath` of `token` when it goes with one; a
 * `nonce` at the token endpoint), made at `now` by the service's clock.
 */
function dpopProof(
  key: DpopKey,
  now: number,
  claims: { htm: string; htu: string; token?: string; nonce?: string },
) {
  const { token, ...rest } = claims;
  return new SignJWT({
    jti: crypto.randomUUID(),
    iat: Math.floor(now / 1000),
    ...rest,
    ...(token && { ath: createHash("sha256").update(token).digest("base64url") }),
  })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: key.jwk })
    .sign(key.privateKey);
}

for (const engine of testEngines()) {
  describe(`dashboard (${engine})`, () => {
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
    // On PostgreSQL the rate-limit windows follow the database's clock, which `advance` does not
    // move: every test starts with no counts, as the memory store (SQLite) does after `advance`.
    beforeEach(async () => {
      if (engine === "postgres") await identity.db.deleteFrom("rate_limits").execute();
    });

    const browser = () => webClient(identity.app);
    const uniqueEmail = () => `person-${crypto.randomUUID()}@example.com`;

    /** Asks for a code in `client` and returns what the mail carried. */
    async function askCode(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      const response = await client.post("/sign-in", { email, next: "/keys" });
      assert.equal(response.status, 303);
      return signInSecrets(await mailbox.next(email.toLowerCase(), since));
    }

    async function signIn(client: WebClient, email = uniqueEmail()) {
      const { code } = await askCode(client, email);
      const response = await client.post("/sign-in/code", { code, next: "/keys" });
      assert.equal(response.status, 303, "the code signs in");
      assert.equal(response.headers.get("location"), "/keys");
      return email;
    }

    async function createUserKey(client: WebClient, name = "laptop") {
      const page = await (await client.submit("/keys", { name })).text();
      const key = /id="new-key" class="secret">(apu_[A-Za-z0-9]+)</.exec(page)?.[1];
      assert.ok(key, "the new key is shown once");
      return key;
    }

    /** The service's own URL (PUBLIC_URL), as the keys page tells the CLI to log in to it. */
    async function publicUrlOf(client: WebClient) {
      const publicUrl = /agentpass login --url ([^<\s]+)<\/code>/.exec(
        await client.text("/keys"),
      )?.[1];
      assert.ok(publicUrl);
      return publicUrl;
    }

    async function createPartnerWithKey(client: WebClient, fields: Record<string, string> = {}) {
      const created = await client.post("/partners", { name: "Weather API", ...fields });
      assert.equal(created.status, 303);
      const path = created.headers.get("location") ?? "";
      const page = await (await client.submit(`${path}/keys`, { name: "production" })).text();
      const key = /id="new-key" class="secret">(apk_[A-Za-z0-9]+)</.exec(page)?.[1];
      assert.ok(key);
      return { path, id: path.split("/").at(-1) ?? "", key };
    }

    describe("sign-in by emailed code", () => {
      it("answers a known and an unknown address identically, and creates the account only once the code is entered", async () => {
        const known = await signIn(browser());
        const unknown = uniqueEmail();
        const answers = [];
        for (const email of [known, unknown]) {
          const client = browser();
          await client.get("/sign-in");
          const response = await client.post("/sign-in", { email, next: "/keys" });
          answers.push({
            status: response.status,
            location: response.headers.get("location"),
            body: await response.text(),
          });
        }
        assert.deepEqual(answers[0], answers[1]);
        const account = await identity.ctx.store.findAccountByEmail(unknown);
        assert.equal(account, undefined, "asking for a code creates no account");
      });

      it("keeps the code to the browser that asked, and does not spend it on another", async () => {
        const asker = browser();
        const email = uniqueEmail();
        const { code, link } = await askCode(asker, email);
        const stranger = browser();
        await stranger.get("/sign-in");
        assert.equal((await stranger.post("/sign-in/code", { code })).status, 400);
        assert.equal((await stranger.post("/sign-in/link", { link })).status, 400);
        assert.equal((await asker.post("/sign-in/code", { code, next: "/keys" })).status, 303);
        assert.ok(await identity.ctx.store.findAccountByEmail(email));
      });

      it("is single use", async () => {
        const client = browser();
        const { code } = await askCode(client, uniqueEmail());
        assert.equal((await client.post("/sign-in/code", { code })).status, 303);
        assert.equal((await client.post("/sign-in/code", { code })).status, 400);
      });

      it("ends the code after 5 wrong tries", async () => {
        const client = browser();
        const { code } = await askCode(client, uniqueEmail());
        const wrong = code === "000000" ? "111111" : "000000";
        for (let i = 0; i < 5; i++) {
          const response = await client.post("/sign-in/code", { code: wrong });
          assert.equal(response.status, 400);
          assert.match(await response.text(), /not right/);
        }
        const response = await client.post("/sign-in/code", { code });
        assert.equal(response.status, 400);
        assert.match(await response.text(), /expired or was tried too often/);
      });

      it("lasts 10 minutes", async () => {
        const early = browser();
        const first = await askCode(early, uniqueEmail());
        identity.advance(10 * MINUTE - 1000);
        assert.equal((await early.post("/sign-in/code", { code: first.code })).status, 303);
        const late = browser();
        const second = await askCode(late, uniqueEmail());
        identity.advance(10 * MINUTE);
        assert.equal((await late.post("/sign-in/code", { code: second.code })).status, 400);
      });

      it("signs in with the one-click link in the same browser", async () => {
        const client = browser();
        const { link } = await askCode(client, uniqueEmail());
        const page = await client.text("/sign-in/link");
        assert.match(page, /id="link-token"/);
        const response = await client.post("/sign-in/link", { link });
        assert.equal(response.status, 303);
        assert.equal((await client.get("/keys")).status, 200);
      });

      it("answers 503 with Retry-After when the mail cannot be sent", async () => {
        const broken = await openTestIdentity(engine, { SMTP_URL: "smtp://127.0.0.1:9" });
        try {
          const client = webClient(broken.app);
          await client.get("/sign-in");
          const response = await client.post("/sign-in", { email: uniqueEmail() });
          assert.equal(response.status, 503);
          assert.equal(response.headers.get("retry-after"), "60");
          assert.match(await response.text(), /could not send the mail/);
        } finally {
          await broken.close();
        }
      });

      it("goes back only to a path of this site after sign-in", async () => {
        for (const next of [
          "//evil.example/x",
          "/\\evil.example",
          "https://evil.example",
          "/\t/evil.example",
          "/caf\u00e9",
          "/device?code=BCDF-GHJK",
        ]) {
          const client = browser();
          const { code } = await askCode(client, uniqueEmail());
          const response = await client.post("/sign-in/code", { code, next });
          assert.equal(response.status, 303);
          assert.equal(
            response.headers.get("location"),
            next.startsWith("/device") ? next : "/keys",
            next,
          );
        }
      });

      it("refuses an invalid address with 400 and a message", async () => {
        const client = browser();
        await client.get("/sign-in");
        const response = await client.post("/sign-in", { email: "not an email" });
        assert.equal(response.status, 400);
        assert.match(await response.text(), /Enter a valid email address/);
      });

      it("limits codes per address: 5 in 15 minutes, 3 long ones per client address, then 429 with Retry-After", async () => {
        identity.advance(15 * MINUTE); // a fresh window
        const email = uniqueEmail();
        const statuses = [];
        let last: Response | undefined;
        for (let i = 0; i < 9; i++) {
          const client = browser();
          await client.get("/sign-in");
          last = await client.post("/sign-in", { email });
          statuses.push(last.status);
        }
        assert.deepEqual(statuses, [...Array(8).fill(303), 429]);
        assert.ok(Number(last?.headers.get("retry-after")) > 0);
        const other = browser();
        await other.get("/sign-in");
        assert.equal((await other.post("/sign-in", { email: uniqueEmail() })).status, 303);
      });
      it("limits codes per client address: the 31st in 15 minutes is 429, whatever the address", async () => {
        identity.advance(15 * MINUTE); // a fresh window
        const statuses = [];
        for (let i = 0; i < 31; i++) {
          const client = browser();
          await client.get("/sign-in");
          statuses.push((await client.post("/sign-in", { email: uniqueEmail() })).status);
        }
        assert.deepEqual(statuses, [...Array(30).fill(303), 429]);
        identity.advance(15 * MINUTE); // the next tests start in a fresh window
      });
    });

    describe("browser session", () => {
      it("sets an HttpOnly, SameSite=Lax cookie and rotates it at every sign-in", async () => {
        const client = browser();
        const email = await signIn(client);
        const first = client.jar.get("agentpass_session");
        assert.ok(first);
        const { code } = await askCode(client, email);
        const response = await client.post("/sign-in/code", { code });
        const cookie = response.headers
          .getSetCookie()
          .find((c) => c.startsWith("agentpass_session="));
        assert.match(cookie ?? "", /HttpOnly/);
        assert.match(cookie ?? "", /SameSite=Lax/);
        assert.doesNotMatch(
          cookie ?? "",
          /Secure/,
          "plain http on localhost cannot hold a Secure cookie",
        );
        const second = client.jar.get("agentpass_session");
        assert.notEqual(second, first);
        const stale = webClient(identity.app);
        stale.jar.set("agentpass_session", first ?? "");
        assert.equal((await stale.get("/keys")).status, 303, "the old session id is dead");
      });

      it("uses __Host- prefixed Secure cookies when the public URL is https", async () => {
        const secure = await openTestIdentity(engine, {
          PUBLIC_URL: "https://agentpass.example",
          SMTP_URL: mailbox.url,
        });
        try {
          const response = await webClient(secure.app, "https://agentpass.example").get("/sign-in");
          const cookie = response.headers.getSetCookie()[0] ?? "";
          assert.match(cookie, /^__Host-agentpass_browser=/);
          assert.match(cookie, /; Secure/);
          assert.match(cookie, /; Path=\//);
        } finally {
          await secure.close();
        }
      });

      it("expires after a day without use", async () => {
        const client = browser();
        await signIn(client);
        identity.advance(23 * 60 * MINUTE);
        assert.equal((await client.get("/keys")).status, 200);
        identity.advance(24 * 60 * MINUTE);
        const response = await client.get("/keys");
        assert.equal(response.status, 303);
        assert.equal(response.headers.get("location"), "/sign-in?next=%2Fkeys");
      });

      it("signs out everywhere", async () => {
        const laptop = browser();
        const email = await signIn(laptop);
        const phone = browser();
        await signIn(phone, email);
        assert.equal((await phone.post("/sign-out-everywhere", {})).status, 303);
        assert.equal((await laptop.get("/keys")).status, 303);
        assert.equal((await phone.get("/keys")).status, 303);
      });

      it("sends security headers with every page", async () => {
        const response = await browser().get("/sign-in");
        assert.match(
          response.headers.get("content-security-policy") ?? "",
          /script-src 'self';.*frame-ancestors 'none'/,
        );
        assert.doesNotMatch(response.headers.get("content-security-policy") ?? "", /unsafe-inline/);
        assert.equal(response.headers.get("x-frame-options"), "DENY");
        assert.equal(response.headers.get("referrer-policy"), "same-origin");
        assert.equal(response.headers.get("x-content-type-options"), "nosniff");
        assert.equal(response.headers.get("cache-control"), "no-store");
      });
    });

    describe("CSRF", () => {
      it("refuses a form post without this browser's token, or from another site, and changes nothing", async () => {
        const client = browser();
        const email = await signIn(client);
        const account = await identity.ctx.store.findAccountByEmail(email);
        const forged = [
          await client.request("/keys", {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "name=evil",
          }),
          await client.post("/keys", { name: "evil", _csrf: "x".repeat(43) }),
          await client.post(
            "/keys",
            { name: "evil" },
            { origin: "https://evil.example", host: "localhost" },
          ),
          await client.post("/keys", { name: "evil" }, { "sec-fetch-site": "cross-site" }),
        ];
        assert.deepEqual(
          forged.map((r) => r.status),
          [403, 403, 403, 403],
        );
        assert.deepEqual(await identity.ctx.store.listKeys("user_keys", account?.id ?? ""), []);
      });
    });

    describe("user keys", () => {
      it("creates a key shown once, lists it by prefix, and revokes it after a confirmation", async () => {
        const client = browser();
        await signIn(client);
        const key = await createUserKey(client);
        assert.equal((await identity.mint(key)).status, 201);
        const list = await client.text("/keys");
        assert.ok(!list.includes(key), "the list never shows the secret again");
        assert.match(list, new RegExp(`${key.slice(0, 12)}…`));
        const keyId = /href="\/keys\/([^/]+)\/revoke"/.exec(list)?.[1];
        const ask = await client.submit(`/keys/${keyId}/revoke`, {});
        assert.match(await ask.text(), /Revoke this key\?/);
        assert.equal((await identity.mint(key)).status, 201, "asking is not revoking");
        const revoked = await client.post(`/keys/${keyId}/revoke`, { confirm: "yes" });
        assert.equal(revoked.status, 303);
        assert.equal((await identity.mint(key)).status, 403);
      });

      it("tells a person how to get the CLI, on the landing page and on the keys page", async () => {
        // The CLI from this service's own URL (apps/identity/test/downloads.test.ts fetches it).
        const install = "npm install -g http://localhost:4000/downloads/agentpass-cli.tgz";
        assert.ok((await browser().text("/")).includes(install), "the landing page");
        const client = browser();
        await signIn(client);
        assert.ok((await client.text("/keys")).includes(install), "the keys page");
      });

      it("refuses an empty or over-long name with 400", async () => {
        const client = browser();
        await signIn(client);
        assert.equal((await client.post("/keys", { name: " " })).status, 400);
        assert.equal((await client.post("/keys", { name: "x".repeat(101) })).status, 400);
      });
    });

    describe("isolation between accounts", () => {
      it("lets nobody see, revoke or use another account's keys and partners", async () => {
        const alice = browser();
        await signIn(alice);
        const aliceKey = await createUserKey(alice);
        const keyId = /href="\/keys\/([^/]+)\/revoke"/.exec(await alice.text("/keys"))?.[1];
        const partner = await createPartnerWithKey(alice);
        const partnerKeyId = /href="\/partners\/[^/]+\/keys\/([^/]+)\/revoke"/.exec(
          await alice.text(partner.path),
        )?.[1];

        const mallory = browser();
        await signIn(mallory);
        const attempts = [
          await mallory.post(`/keys/${keyId}/revoke`, { confirm: "yes" }),
          await mallory.get(`/keys/${keyId}/revoke`),
          await mallory.post(`/keys/${keyId}/rename`, { name: "mine" }),
          await mallory.get(partner.path),
          await mallory.post(partner.path, { name: "Taken over", listed: "yes" }),
          await mallory.post(`${partner.path}/keys`, { name: "mine" }),
          await mallory.post(`${partner.path}/keys/${partnerKeyId}/revoke`, { confirm: "yes" }),
          await mallory.post(`${partner.path}/keys/${partnerKeyId}/rename`, { name: "mine" }),
          await mallory.post(`${partner.path}/delete`, { confirm: "yes" }),
          await mallory.get(`${partner.path}/delete`),
        ];
        assert.deepEqual(
          attempts.map((r) => r.status),
          Array(10).fill(404),
        );
        assert.equal((await identity.mint(aliceKey)).status, 201);
        const token = await identity.token(aliceKey);
        assert.equal(
          (await identity.verify(`Bearer ${partner.key}`, JSON.stringify({ sessionToken: token })))
            .status,
          200,
        );
        assert.equal((await identity.ctx.store.findPartner(partner.id))?.name, "Weather API");
        assert.match(await alice.text("/keys"), /<td>laptop<\/td>/, "the key keeps its name");
      });
    });

    describe("partners", () => {
      it("shows a partner how to use its key, with this service's URL, once it has a live one", async () => {
        const owner = browser();
        await signIn(owner);
        const publicUrl = /agentpass login --url ([^<\s]+)<\/code>/.exec(
          await owner.text("/keys"),
        )?.[1];
        assert.ok(publicUrl);
        const created = await owner.post("/partners", { name: "Maps API" });
        const path = created.headers.get("location") ?? "";
        const snippet = `AGENTPASS_URL=${publicUrl}`;
        assert.ok(!(await owner.text(path)).includes(snippet), "no key yet: nothing to use");
        await owner.submit(`${path}/keys`, { name: "production" });
        const page = await owner.text(path);
        assert.ok(page.includes(snippet), "the service's own URL");
        assert.ok(
          page.includes(`npm install ${publicUrl}/downloads/agentpass-verify.tgz`),
          "the library's install line, from this service",
        );
        assert.ok(page.includes("from agentpass import verify"), "and Python's");
      });

      it("counts verifications in the partner's usage and the person's activity, and a revoked partner key gets 403", async () => {
        const owner = browser();
        await signIn(owner);
        const partner = await createPartnerWithKey(owner, { website: "https://weather.example" });
        const person = browser();
        await signIn(person);
        const userKey = await createUserKey(person);
        const token = await identity.token(userKey);
        const verify = (sessionToken: string) =>
          identity.verify(`Bearer ${partner.key}`, JSON.stringify({ sessionToken }));
        assert.match(
          await owner.text(partner.path),
          /<p class="empty" id="usage-empty">No verifications in the last 30 days yet\./,
          "before any verification, the chart says what will appear",
        );
        assert.equal((await verify(token)).status, 200);
        assert.equal((await verify(token)).status, 200);
        assert.equal((await verify("aps_forged")).status, 401);

        const page = await owner.text(partner.path);
        assert.doesNotMatch(page, /usage-empty/);
        assert.match(page, /<tr data-outcome="success"><td>Verified<\/td><td>2<\/td>/);
        assert.match(
          page,
          /<tr data-outcome="invalid_token"><td>Invalid or expired token<\/td><td>1<\/td>/,
        );
        assert.match(page, /<svg class="chart"/);
        const activity = await person.text("/activity");
        assert.match(activity, /Weather API/);
        assert.match(activity, /<td>2<\/td>/);

        const keyId = /href="\/partners\/[^/]+\/keys\/([^/]+)\/revoke"/.exec(page)?.[1];
        await owner.post(`${partner.path}/keys/${keyId}/revoke`, { confirm: "yes" });
        const revoked = await verify(token);
        assert.equal(revoked.status, 403);
        assert.deepEqual(await revoked.json(), {
          error: "Partner key has been revoked",
          code: "partner_key_revoked",
        });
        assert.match(
          await owner.text(partner.path),
          /<tr data-outcome="revoked_partner_key"><td>Revoked partner key<\/td><td>1<\/td>/,
        );
      });

      it("counts a key-bound token's refusals by what was wrong with its proof", async () => {
        const owner = browser();
        await signIn(owner);
        const partner = await createPartnerWithKey(owner);
        const person = browser();
        await signIn(person);
        const userKey = await createUserKey(person);
        const key = await dpopKey();
        const minted = await identity.app.request("/api/session-tokens", {
          method: "POST",
          headers: {
            authorization: `Bearer ${userKey}`,
            dpop: await dpopProof(key, identity.now(), {
              htm: "POST",
              htu: `${await publicUrlOf(person)}/api/session-tokens`,
            }),
          },
        });
        const { sessionToken: token, tokenType } = (await minted.json()) as Record<string, string>;
        assert.equal(tokenType, "DPoP", "a token bound to the key");
        const request = { method: "GET", url: "https://weather.example/forecast" };
        const proofBy = (signer: DpopKey, htm = request.method) =>
          dpopProof(signer, identity.now(), { htm, htu: request.url, token });
        const verify = async (proof?: string) => {
          const dpop = proof === undefined ? {} : { dpop: { proof, ...request } };
          const response = await identity.verify(
            `Bearer ${partner.key}`,
            JSON.stringify({ sessionToken: token, ...dpop }),
          );
          return {
            status: response.status,
            code: ((await response.json()) as { code?: string }).code,
          };
        };
        const used = await proofBy(key);
        assert.deepEqual(await verify(used), { status: 200, code: undefined });
        assert.deepEqual(await verify(used), { status: 401, code: "session_token_proof_invalid" });
        assert.deepEqual(await verify(), { status: 401, code: "session_token_proof_required" });
        assert.deepEqual(await verify(await proofBy(await dpopKey())), {
          status: 401,
          code: "session_token_proof_invalid",
        });
        for (const htm of ["POST", "DELETE"]) {
          assert.equal((await verify(await proofBy(key, htm))).status, 401);
        }

        const page = await owner.text(partner.path);
        const counted = {
          success: ["Verified", 1],
          proof_replayed: ["Replayed DPoP proof", 1],
          proof_required: ["Key-bound token without its DPoP proof", 1],
          proof_wrong_key: ["DPoP proof signed by another key", 1],
          proof_invalid: ["Invalid DPoP proof", 2],
          invalid_token: ["Invalid or expired token", 0],
        };
        for (const [outcome, [label, count]] of Object.entries(counted)) {
          assert.ok(
            page.includes(`<tr data-outcome="${outcome}"><td>${label}</td><td>${count}</td></tr>`),
            `${outcome}: ${count}`,
          );
        }
      });

      it("leaves people the record of a deleted partner, under its name, until they delete their account", async () => {
        const owner = browser();
        await signIn(owner);
        const deleted = await createPartnerWithKey(owner, {
          name: "Tide Tables",
          website: "https://tides.example",
        });
        const ownerOfTwo = browser();
        await signIn(ownerOfTwo);
        const goneWithItsOwner = await createPartnerWithKey(ownerOfTwo, { name: "Moon Phases" });
        const kept = await createPartnerWithKey(owner, { name: "Star Charts" });

        const person = browser();
        const email = await signIn(person);
        const token = await identity.token(await createUserKey(person));
        for (const partner of [deleted, goneWithItsOwner, kept]) {
          const answer = await identity.verify(
            `Bearer ${partner.key}`,
            JSON.stringify({ sessionToken: token }),
          );
          assert.equal(answer.status, 200);
        }
        // The owners saw their own partners too: their records go with their accounts.
        const ownToken = await identity.token(await createUserKey(ownerOfTwo));
        const own = await identity.verify(
          `Bearer ${goneWithItsOwner.key}`,
          JSON.stringify({ sessionToken: ownToken }),
        );
        assert.equal(own.status, 200);

        const removed = await owner.post(`${deleted.path}/delete`, { confirm: "yes" });
        assert.equal(removed.status, 303);
        const leaving = await ownerOfTwo.post("/account/delete", { confirm: "yes" });
        assert.equal(leaving.status, 303);

        const activity = await person.text("/activity");
        assert.match(
          activity,
          /<tr><td>Tide Tables <span class="muted">\(deleted [^)]+\)<\/span><\/td>/,
          "the deleted partner is listed under its name, without its website as a link",
        );
        assert.doesNotMatch(activity, /href="https:\/\/tides\.example"/);
        assert.match(activity, /<tr><td>Moon Phases <span class="muted">\(deleted /);
        assert.match(activity, /<tr><td>Star Charts<\/td>/);
        assert.equal((activity.match(/<td>1<\/td>/g) ?? []).length, 3, "each seen once");

        const account = await identity.ctx.store.findAccountByEmail(email);
        assert.ok(account);
        const departedOf = async (accountId: string) =>
          (
            await identity.db
              .selectFrom("departed_partner_activity")
              .select("partner_id")
              .where("account_id", "=", accountId)
              .execute()
          ).length;
        assert.equal(await departedOf(account.id), 2);
        assert.equal((await person.post("/account/delete", { confirm: "yes" })).status, 303);
        assert.equal(await departedOf(account.id), 0, "the person's records go with their account");
      });

      it("refuses a website that is not http(s) and an empty name, with 400", async () => {
        const client = browser();
        await signIn(client);
        const bad = await client.post("/partners", { name: "X", website: "javascript:alert(1)" });
        assert.equal(bad.status, 400);
        assert.match(await bad.text(), /Website must be an http\(s\) URL/);
        assert.equal((await client.post("/partners", { name: "" })).status, 400);
      });

      it("escapes what partners write", async () => {
        const client = browser();
        await signIn(client);
        const created = await client.post("/partners", {
          name: "<script>alert(1)</script>",
          listed: "yes",
        });
        const page = await client.text(created.headers.get("location") ?? "");
        assert.ok(!page.includes("<script>alert(1)"));
        assert.match(page, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
      });
    });

    describe("directory", () => {
      it("lists listed partners only, as a page and as JSON", async () => {
        const client = browser();
        await signIn(client);
        const listed = await createPartnerWithKey(client, {
          name: "Listed Notes",
          description: "Notes for agents",
          website: "https://notes.example",
          listed: "yes",
        });
        const hidden = await createPartnerWithKey(client, { name: "Hidden Internal" });
        const response = await identity.app.request("/api/partners");
        assert.equal(response.status, 200);
        const { partners } = (await response.json()) as { partners: { id: string }[] };
        assert.deepEqual(
          partners.find((p) => p.id === listed.id),
          {
            id: listed.id,
            name: "Listed Notes",
            description: "Notes for agents",
            website: "https://notes.example",
            verified: false,
            resembles: null,
          },
        );
        assert.equal(
          partners.find((p) => p.id === hidden.id),
          undefined,
        );
        const page = await browser().text("/directory");
        assert.match(page, /Listed Notes/);
        assert.doesNotMatch(page, /Hidden Internal/);
      });
    });

    describe("account deletion", () => {
      it("asks first, then deletes the account with every key: nothing mints or verifies again", async () => {
        const client = browser();
        const email = await signIn(client);
        const userKey = await createUserKey(client);
        const partner = await createPartnerWithKey(client);
        const token = await identity.token(userKey);
        assert.match(await client.text("/account/delete"), /Delete your account\?/);
        assert.match(
          await (await client.submit("/account/delete", {})).text(),
          /Delete your account\?/,
          "a post without the confirmation leads back to it",
        );
        assert.ok(await identity.ctx.store.findAccountByEmail(email));
        const done = await client.post("/account/delete", { confirm: "yes" });
        assert.equal(done.status, 303);
        assert.equal(done.headers.get("location"), "/");
        assert.equal(await identity.ctx.store.findAccountByEmail(email), undefined);
        assert.match(
          await (await client.follow(done)).text(),
          /<p class="ok" role="status">Your account and all its keys are gone\.<\/p>/,
        );
        assert.doesNotMatch(await client.text("/"), /all its keys are gone/, "said once");
        assert.equal((await identity.mint(userKey)).status, 401);
        const verified = await identity.verify(
          `Bearer ${partner.key}`,
          JSON.stringify({ sessionToken: token }),
        );
        assert.equal(verified.status, 401);
        assert.equal((await client.get("/keys")).status, 303);
      });
    });

    describe("connected apps bound to a key (DPoP, RFC 9449)", () => {
      const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
      const form = { "content-type": "application/x-www-form-urlencoded" };

      /**
       * A device login of the CLI's client named `name`, approved by `person` and redeemed at
       * the token endpoint: with a proof by `key` (after the nonce it asks for), else as bearer.
       */
      async function deviceLogin(person: WebClient, name: string, key?: DpopKey) {
        const started = await identity.app.request("/oauth/device_authorization", {
          method: "POST",
          headers: form,
          body: new URLSearchParams({ client_id: "agentpass-cli", client_name: name }).toString(),
        });
        const code = (await started.json()) as Record<string, string>;
        await person.post("/device", { code: code.user_code ?? "", decision: "approve" });
        const publicUrl = await publicUrlOf(person);
        const redeem = async (nonce?: string) =>
          identity.app.request("/oauth/token", {
            method: "POST",
            headers: {
              ...form,
              ...(key && {
                dpop: await dpopProof(key, identity.now(), {
                  htm: "POST",
                  htu: `${publicUrl}/oauth/token`,
                  nonce,
                }),
              }),
            },
            body: new URLSearchParams({
              grant_type: DEVICE_GRANT,
              device_code: code.device_code ?? "",
              client_id: "agentpass-cli",
            }).toString(),
          });
        let redeemed = await redeem();
        const nonce = redeemed.headers.get("dpop-nonce");
        if (redeemed.status === 400 && nonce) redeemed = await redeem(nonce);
        assert.equal(redeemed.status, 200);
        const body = (await redeemed.json()) as Record<string, string>;
        assert.equal(body.token_type, key ? "DPoP" : "Bearer");
      }

      it("says on /keys which apps' tokens are bound to a key, by its thumbprint, and which are bearer", async () => {
        const person = browser();
        await signIn(person);
        const key = await dpopKey();
        await deviceLogin(person, "bound-laptop", key);
        await deviceLogin(person, "bearer-laptop");

        const page = await person.text("/keys");
        const row = (name: string) =>
          new RegExp(`<tr data-grant="[^"]+"><td><strong>${name}</strong>[\\s\\S]*?</tr>`).exec(
            page,
          )?.[0] ?? "";
        assert.match(page, /<th scope="col">Tokens<\/th>/);
        assert.match(
          row("bound-laptop"),
          new RegExp(
            `<td data-binding="dpop">Bound to a key \\(DPoP\\)<br><span class="muted">key SHA-256 thumbprint <code>${key.jkt.slice(0, 8)}…</code></span></td>`,
          ),
        );
        assert.doesNotMatch(page, new RegExp(key.jkt), "only the start of the thumbprint");
        assert.match(row("bearer-laptop"), /<td data-binding="bearer">Bearer \(not bound\)<\/td>/);
        assert.match(page, /<p id="keys-bearer">A key made here is a bearer key/);
      });
    });

    describe("device login (RFC 8628)", () => {
      const api = (path: string, body: unknown) =>
        identity.app.request(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const poll = async (deviceCode: string) => {
        const response = await api("/api/device/token", {
          grant_type: "urn:ietf:params:oauth:grant-type:device_code",
          device_code: deviceCode,
        });
        return { status: response.status, body: (await response.json()) as Record<string, string> };
      };

      it("hands a new user key, named after the device, to the CLI once the person approves", async () => {
        const started = await api("/api/device/code", { client_name: "ada-laptop" });
        assert.equal(started.status, 200);
        const code = (await started.json()) as Record<string, string | number>;
        assert.match(String(code.user_code), /^[B-Z]{4}-[B-Z]{4}$/);
        assert.equal(code.interval, 5);
        assert.equal(code.expires_in, 600);
        const deviceCode = String(code.device_code);

        assert.equal((await poll(deviceCode)).body.error, "authorization_pending");
        assert.equal((await poll(deviceCode)).body.error, "slow_down");

        const person = browser();
        await person.get("/sign-in");
        const redirect = await person.get(`/device?code=${code.user_code}`);
        assert.equal(redirect.status, 303, "signing in comes first");
        assert.equal(
          redirect.headers.get("location"),
          `/sign-in?next=${encodeURIComponent(`/device?code=${code.user_code}`)}`,
        );
        await signIn(person);
        const typed = String(code.user_code).toLowerCase().replace("-", " ");
        const looked = await person.post("/device", { code: typed });
        assert.equal(looked.status, 303, "the code typed goes to the confirmation, not in a URL");
        assert.equal(looked.headers.get("location"), "/device");
        const page = await (await person.follow(looked)).text();
        assert.match(page, /ada-laptop/);
        assert.match(page, /name="decision" value="approve"/);
        assert.doesNotMatch(await person.text("/device"), /ada-laptop/, "shown once");
        const approved = await person.submit("/device", {
          code: String(code.user_code),
          decision: "approve",
        });
        assert.match(await approved.text(), /<p class="ok" role="status">Approved\./);

        identity.advance(5000);
        const granted = await poll(deviceCode);
        assert.equal(granted.status, 200);
        assert.match(granted.body.user_key ?? "", /^apu_/);
        assert.equal((await identity.mint(granted.body.user_key ?? "")).status, 201);
        assert.match(await person.text("/keys"), /ada-laptop/);
        identity.advance(5000);
        assert.equal(
          (await poll(deviceCode)).body.error,
          "invalid_grant",
          "the key is handed over once",
        );
      });

      it("answers access_denied when the person denies, and expired_token after 10 minutes", async () => {
        const person = browser();
        await signIn(person);
        const denied = (await (await api("/api/device/code", {})).json()) as Record<string, string>;
        await person.post("/device", { code: denied.user_code ?? "", decision: "deny" });
        assert.deepEqual((await poll(denied.device_code ?? "")).body.error, "access_denied");

        const expired = (await (await api("/api/device/code", {})).json()) as Record<
          string,
          string
        >;
        identity.advance(10 * MINUTE);
        assert.equal((await poll(expired.device_code ?? "")).body.error, "expired_token");
        const late = await person.post("/device", {
          code: expired.user_code ?? "",
          decision: "approve",
        });
        assert.equal(late.status, 400);
      });

      it("answers bad requests with 400 JSON errors", async () => {
        for (const body of ["[", "[]", '{"device_code":5}', '{"client_name":5}']) {
          for (const path of ["/api/device/token", "/api/device/code"]) {
            const response = await identity.app.request(path, { method: "POST", body });
            if (path === "/api/device/code" && body === '{"device_code":5}') continue; // extra fields are ignored
            assert.equal(response.status, 400, `${path} ${body}`);
            assert.equal(typeof ((await response.json()) as { error: unknown }).error, "string");
          }
        }
        assert.equal((await poll("unknown")).body.error, "invalid_grant");
      });
    });
  });
}
