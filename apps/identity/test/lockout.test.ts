import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

for (const engine of testEngines()) {
  describe(`strangers cannot lock an address's owner out of signing in (${engine})`, () => {
    let identity: TestIdentity;
    let mailbox: Mailbox;

    // Every request of these tests comes from one client address (in process, "unknown"), as an
    // attacker's and its victim's may through one proxy: each test starts with fresh counters.
    before(async () => {
      mailbox = await startMailbox();
    });
    beforeEach(async () => {
      identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
    });
    afterEach(() => identity.close());
    after(() => mailbox.close());

    const browser = async () => {
      const client = webClient(identity.app);
      await client.get("/sign-in");
      return client;
    };

    async function signIn(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await client.post("/sign-in/code", { code, next: "/keys" })).status, 303);
    }

    /** What a stranger sees: the status and the page's message, nothing of the browser. */
    async function strangerAsks(email: string) {
      const response = await (await browser()).post("/sign-in", { email });
      const page = await response.text();
      return { status: response.status, message: /role="alert">([^<]*)</.exec(page)?.[1] ?? "" };
    }

    it("lets the owner sign in from a browser they used before while strangers flood the address", async () => {
      const email = `owner-${crypto.randomUUID()}@example.com`;
      const owner = await browser();
      await signIn(owner, email);

      const flood = [];
      for (let i = 0; i < 30; i++) flood.push((await strangerAsks(email)).status);
      // The owner's own first sign-in was a stranger's request too: 4 more codes, then this
      // client address's 3 long codes past the address's budget, then 429.
      assert.deepEqual(
        flood,
        [...Array(7).fill(303), ...Array(23).fill(429)],
        "the inbox is protected",
      );

      await owner.post("/sign-out", {});
      await signIn(owner, email);
      assert.equal((await owner.get("/keys")).status, 200, "the owner is signed in");
    });

    it("answers strangers alike whether the address has an account or not", async () => {
      const member = `member-${crypto.randomUUID()}@example.com`;
      await signIn(await browser(), member);
      const nobody = `nobody-${crypto.randomUUID()}@example.com`;
      // The same history for both addresses: one code asked for (the member's was redeemed).
      await (await browser()).post("/sign-in", { email: nobody });
      for (let i = 0; i < 7; i++) {
        const [forMember, forNobody] = [await strangerAsks(member), await strangerAsks(nobody)];
        assert.deepEqual(forMember, forNobody, `request ${i + 1}`);
      }
    });

    it("still bounds the mail a remembered browser can ask for", async () => {
      const email = `busy-${crypto.randomUUID()}@example.com`;
      const owner = await browser();
      await signIn(owner, email);
      const statuses = [];
      for (let i = 0; i < 6; i++) statuses.push((await owner.post("/sign-in", { email })).status);
      assert.deepEqual(statuses, [303, 303, 303, 303, 303, 429], "its own 5 in 15 minutes");
    });
  });
}
