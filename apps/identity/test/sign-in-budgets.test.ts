import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { webClient } from "./support/web-client.ts";

/** The code a sign-in mail's subject gives, 6 digits or 16 in groups of 4, as a person reads it. */
const codeOf = (subject: string) => /code: ([\d ]+)$/.exec(subject)?.[1] ?? "";

for (const engine of testEngines()) {
  describe(`sign-in budgets strangers cannot spend for the owner (${engine})`, () => {
    let identity: TestIdentity;
    let mailbox: Mailbox;

    // The service trusts the loopback proxy: each request names its client address.
    before(async () => {
      mailbox = await startMailbox();
    });
    beforeEach(async () => {
      identity = await openTestIdentity(engine, {
        SMTP_URL: mailbox.url,
        TRUST_PROXY: "127.0.0.1/32,::1/128",
      });
    });
    afterEach(() => identity.close());
    after(() => mailbox.close());

    /** A new browser at client address `from`. */
    async function browser(from: string) {
      const client = webClient(identity.app);
      await client.get("/sign-in");
      const at = { "x-forwarded-for": from };
      return {
        ask: (email: string) => client.post("/sign-in", { email, next: "/keys" }, at),
        type: (code: string) => client.post("/sign-in/code", { code, next: "/keys" }, at),
        follow: (link: string) => client.post("/sign-in/link", { link }, at),
        get: client.get,
      };
    }

    it("mails the owner a code from a new browser while strangers elsewhere spend the address's budget", async () => {
      const email = `owner-${crypto.randomUUID()}@example.com`;
      const asked = async (from: string) => (await (await browser(from)).ask(email)).status;
      const statuses: number[] = [];
      for (let i = 0; i < 9; i++) statuses.push(await asked("198.51.100.1"));
      assert.deepEqual(statuses, [...Array(8).fill(303), 429], "5 codes, then 3 long ones");
      for (const stranger of ["198.51.100.2", "198.51.100.3"]) {
        const each = [];
        for (let i = 0; i < 4; i++) each.push(await asked(stranger));
        assert.deepEqual(each, [303, 303, 303, 429], "each address its 3 long codes");
      }

      const owner = await browser("203.0.113.7");
      const since = mailbox.mails.length;
      assert.equal((await owner.ask(email)).status, 303);
      const code = codeOf((await mailbox.next(email, since)).subject);
      assert.match(code, /^\d{4} \d{4} \d{4} \d{4}$/, "16 digits: too many to guess in 5 tries");
      const signedIn = await owner.type(code);
      assert.equal(signedIn.status, 303);
      assert.equal(signedIn.headers.get("location"), "/keys");
      assert.equal((await owner.get("/keys")).status, 200, "the owner is signed in");
    });

    it("lets the owner follow the link of a long code's mail", async () => {
      const email = `linked-${crypto.randomUUID()}@example.com`;
      for (let i = 0; i < 5; i++) await (await browser("198.51.100.1")).ask(email);
      const owner = await browser("203.0.113.8");
      const since = mailbox.mails.length;
      assert.equal((await owner.ask(email)).status, 303);
      const mail = await mailbox.next(email, since);
      assert.match(codeOf(mail.subject), /^[\d ]{19}$/);
      const link = /\/sign-in\/link#([\w-]+)/.exec(mail.text)?.[1] ?? "";
      assert.equal((await owner.follow(link)).status, 303);
    });

    it("answers failed sign-ins past a client address's budget 429 with Retry-After, before any work", async () => {
      const stranger = await browser("198.51.100.9");
      const statuses = new Map<number, number>();
      let refused: Response | undefined;
      for (let i = 0; i < 151; i++) {
        const answer = i % 2 ? await stranger.type("123456") : await stranger.follow("x");
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status === 429) refused = answer;
      }
      const counts = Object.fromEntries(statuses);
      assert.deepEqual(counts, { 400: 150, 429: 1 }, "150 failures in 15 minutes");
      assert.ok(Number(refused?.headers.get("retry-after")) > 0);
      assert.match((await refused?.text()) ?? "", /Too many failed sign-ins from your network/);
      assert.equal((await stranger.type("123456")).status, 429);
      assert.equal((await stranger.follow("x")).status, 429);

      // Another address is not refused, and signs in as ever.
      const owner = await browser("203.0.113.9");
      assert.equal((await owner.type("123456")).status, 400);
      const email = `owner-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      await owner.ask(email);
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await owner.type(code)).status, 303);
    });
  });
}
