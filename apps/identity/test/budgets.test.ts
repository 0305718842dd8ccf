import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { startDeviceLogin } from "../src/domain/device-login.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { type WebClient, webClient } from "./support/web-client.ts";

const GUESSES = 120;
const RIGHT_ONE_AT = 40;
const WRONG_CODE = "That code is not right.";

for (const engine of testEngines()) {
  describe(`budgeted secrets under concurrency (${engine})`, () => {
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

    async function askCode(client: WebClient, email: string) {
      const since = mailbox.mails.length;
      assert.equal((await client.post("/sign-in", { email, next: "/keys" })).status, 303);
      return signInSecrets(await mailbox.next(email, since));
    }

    const attemptsOf = (email: string) =>
      identity.db
        .selectFrom("sign_in_codes")
        .select(["attempts", "used_at"])
        .where("email", "=", email)
        .executeTakeFirstOrThrow();

    it(`judges at most 5 of ${GUESSES} guesses at one sign-in code sent at once`, async () => {
      const attacker = webClient(identity.app);
      const email = `victim-${crypto.randomUUID()}@example.com`;
      const { code } = await askCode(attacker, email);
      const wrong = (i: number) => String((Number(code) + 1 + i) % 1_000_000).padStart(6, "0");
      const guesses = Array.from({ length: GUESSES }, (_, i) =>
        i === RIGHT_ONE_AT ? code : wrong(i),
      );

      const answers = await Promise.all(
        guesses.map((guess) => attacker.post("/sign-in/code", { code: guess, next: "/keys" })),
      );
      const pages = await Promise.all(answers.map((answer) => answer.text()));

      const judged = pages.filter((page) => page.includes(WRONG_CODE)).length;
      assert.ok(judged <= 5, `${judged} wrong guesses were judged`);
      assert.ok(
        answers.every((answer) => answer.status === 400),
        "the right code, sent after the budget was spent, signs nobody in",
      );
      assert.equal(await identity.ctx.store.findAccountByEmail(email), undefined);
      const stored = await attemptsOf(email);
      assert.equal(stored.attempts, 5);
      assert.notEqual(stored.used_at, null, "the spent code is closed");
    });

    it(`spends the code's tries on links opened in other browsers, ${GUESSES} at once`, async () => {
      const owner = webClient(identity.app);
      const email = `owner-${crypto.randomUUID()}@example.com`;
      const { link } = await askCode(owner, email);
      const strangers = await Promise.all(
        Array.from({ length: GUESSES }, async () => {
          const stranger = webClient(identity.app);
          await stranger.get("/sign-in");
          return stranger;
        }),
      );
      const answers = await Promise.all(
        strangers.map((stranger) => stranger.post("/sign-in/link", { link })),
      );
      // Refused, every one: 400, 429 past the client address's budget of failures (the guesses
      // above spent most of it), or 503 when the database could not be reached in time under
      // this burst (a loaded CI machine); never a sign-in.
      const statuses = answers.map((answer) => answer.status);
      assert.ok(
        statuses.every((status) => status === 400 || status === 429 || status === 503),
        `every stranger refused: ${JSON.stringify(statuses)}`,
      );
      assert.ok(statuses.includes(400));
      assert.equal((await attemptsOf(email)).attempts, 5);
      const late = await owner.post("/sign-in/link", { link });
      // 400, or 429 when the strangers spent this client address's budget of failures too.
      assert.ok([400, 429].includes(late.status), "once spent, the link no longer works");
    });

    it("answers only one of many polls of a device code sent at once; the rest slow down", async () => {
      const started = await startDeviceLogin(identity.ctx, "laptop", "127.0.0.1");
      const polls = await Promise.all(
        Array.from({ length: 100 }, () =>
          identity.app.request("/api/device/token", {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ device_code: started.deviceCode }).toString(),
          }),
        ),
      );
      const errors = await Promise.all(
        polls.map(async (poll) => ((await poll.json()) as { error: string }).error),
      );
      assert.equal(errors.filter((error) => error === "authorization_pending").length, 1);
      assert.equal(errors.filter((error) => error === "slow_down").length, 99);
    });
  });
}
