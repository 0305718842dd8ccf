import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { displayableClientName } from "../src/domain/device-login.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

// An attacker's device name: a right-to-left override turns "moc.elgoog" around on screen,
// zero-width and filler characters hide in it.
const HOSTILE_NAME = "Google\u200b Chrome\u202e\u2066 moc.elgoog\u3164";

for (const engine of testEngines()) {
  describe(`device login against phishing (${engine})`, () => {
    let identity: TestIdentity;
    let mailbox: Mailbox;

    /** A service behind one trusted proxy, whose address is what the proxy forwards. */
    let proxied: TestIdentity;

    before(async () => {
      mailbox = await startMailbox();
      identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
      proxied = await openTestIdentity(engine, { SMTP_URL: mailbox.url, TRUST_PROXY: "1" });
    });
    after(async () => {
      await identity.close();
      await proxied.database.drop();
      await mailbox.close();
    });

    async function signedIn(on: TestIdentity = identity): Promise<WebClient> {
      const client = webClient(on.app);
      const email = `victim-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      await client.post("/sign-in", { email, next: "/keys" });
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await client.post("/sign-in/code", { code, next: "/keys" })).status, 303);
      return client;
    }

    async function startLogin(clientName: string) {
      const response = await identity.app.request("/api/device/code", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: clientName }),
      });
      return (await response.json()) as { user_code: string; device_code: string };
    }

    it("never approves from a link: a pre-filled code only fills in the form, with a warning", async () => {
      const attacker = await startLogin("laptop");
      const victim = await signedIn();
      const page = await victim.text(`/device?code=${attacker.user_code}`);
      assert.match(
        page,
        new RegExp(`<input id="user-code" name="code"[^>]* value="${attacker.user_code}"`),
      );
      assert.equal(page.split(attacker.user_code).length, 2, "the code is in the form field only");
      const mangled = await victim.text(`/device?code=${encodeURIComponent('"><b>x')}`);
      assert.ok(
        !/id="user-code"[^>]* value=/.test(mangled),
        "what is no user code is not filled in",
      );
      assert.ok(!/name="decision"/.test(page), "no approve button");
      assert.match(page, /A link never approves a login/);
      assert.match(page, /Type the code shown in your own terminal/);
    });

    it("shows who asks as unverified, without bidi or invisible characters, and when and from where", async () => {
      const attacker = await startLogin(HOSTILE_NAME);
      const victim = await signedIn();
      const page = await (await victim.submit("/device", { code: attacker.user_code })).text();
      assert.ok(!/[\u200b\u202e\u2066\u3164]/.test(page), "no bidi or invisible characters");
      assert.match(
        page,
        /Google Chrome moc\.elgoog <span class="muted">\(the device's own name for itself, not verified\)/,
      );
      assert.match(page, /less than a minute ago \(2026-11-23 12:00 UTC\)/);
      assert.match(page, /Approve only a login you started yourself/);
      assert.match(page, /name="decision" value="approve"/);
    });

    it("says where the login was started, and warns when that is another network", async () => {
      const server = await startServer(proxied.service, { port: 0, host: "127.0.0.1" });
      try {
        const started = await fetch(`${server.url}/api/device/code`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.77" },
          body: JSON.stringify({ client_name: "laptop" }),
        });
        const { user_code } = (await started.json()) as { user_code: string };
        const victim = await signedIn(proxied);
        const page = await (await victim.submit("/device", { code: user_code })).text();
        assert.match(page, /203\.0\.113\.77 <span class="muted">\(network 203\.0\.113\.0\/24\)/);
        assert.match(page, /started from another network than the one you are using now/);
      } finally {
        await new Promise<void>((resolve) => server.close().then(resolve, resolve));
      }
    });

    it("limits the codes one account may try: 20 in 15 minutes, then 429", async () => {
      const guesser = await signedIn();
      const statuses: number[] = [];
      for (let i = 0; i < 25; i++) {
        statuses.push((await guesser.post("/device", { code: "BCDF-GHJK" })).status);
      }
      assert.deepEqual(statuses, [...Array(20).fill(404), ...Array(5).fill(429)]);
      const decide = await guesser.post("/device", { code: "BCDF-GHJK", decision: "approve" });
      assert.equal(decide.status, 429, "deciding counts too: guesses cannot skip the lookup");
    });
  });
}

describe("what the approval page shows of names and addresses", () => {
  it("keeps a name readable and strips what could disguise it", () => {
    assert.equal(displayableClientName(HOSTILE_NAME), "Google Chrome moc.elgoog");
    assert.equal(displayableClientName("agentpass on ada-laptop"), "agentpass on ada-laptop");
    assert.equal(displayableClientName("Zoë's Mac"), "Zoë's Mac");
    assert.equal(displayableClientName("\u202e\u200b"), "CLI login");
  });
});
