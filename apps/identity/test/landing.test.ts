import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { webClient } from "./support/web-client.ts";

for (const engine of testEngines()) {
  describe(`the front page (${engine})`, () => {
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

    it("tells a visitor what AgentPass is, for people, agents and partners, with sign-in", async () => {
      const response = await webClient(identity.app).get("/");
      assert.equal(response.status, 200);
      const page = await response.text();
      for (const heading of ["For people", "For agents", "For partners"]) {
        assert.match(page, new RegExp(`<h2>${heading}</h2>`));
      }
      assert.match(page, /<a class="button" href="\/sign-in">Sign in or sign up<\/a>/);
    });

    it("sends a signed-in person to their keys, with their address in the header", async () => {
      const client = webClient(identity.app);
      const email = `header-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      await client.post("/sign-in", { email, next: "/keys" });
      const { code } = signInSecrets(await mailbox.next(email, since));
      await client.post("/sign-in/code", { code, next: "/keys" });
      const front = await client.get("/");
      assert.equal(front.status, 303);
      assert.equal(front.headers.get("location"), "/keys");
      assert.match(
        await client.text("/keys"),
        new RegExp(`Signed in as </span><strong id="signed-in-as">${email}</strong>`),
      );
    });
  });
}

for (const engine of testEngines()) {
  describe(`the page that asks for the code (${engine})`, () => {
    it("names the address the code went to, to the browser that asked only", async () => {
      const mailbox = await startMailbox();
      const identity = await openTestIdentity(engine, { SMTP_URL: mailbox.url });
      try {
        const asker = webClient(identity.app);
        const email = `code-page-${crypto.randomUUID()}@example.com`;
        await asker.post("/sign-in", { email, next: "/keys" });
        const page = await asker.text("/sign-in/code?next=/keys");
        assert.match(page, new RegExp(`<strong id="sent-to">${email}</strong>`));
        assert.doesNotMatch(page, /Development: no mail is sent/, "mail is sent over SMTP");
        const other = await webClient(identity.app).text("/sign-in/code?next=/keys");
        assert.doesNotMatch(other, /sent-to/);
      } finally {
        await identity.close();
        await mailbox.close();
      }
    });

    it("says, in development without SMTP, that the code is in the service's log", async () => {
      const identity = await openTestIdentity(engine);
      try {
        const asker = webClient(identity.app);
        await asker.post("/sign-in", { email: "dev@example.com", next: "/keys" });
        assert.match(
          await asker.text("/sign-in/code?next=/keys"),
          /Development: no mail is sent \(SMTP_URL is not set\)\. The code is in the identity service's log\./,
        );
      } finally {
        await identity.close();
      }
    });
  });
}
