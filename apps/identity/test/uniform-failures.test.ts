import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { revokeKey } from "../src/domain/credentials.ts";
import { verifySessionToken } from "../src/domain/session-tokens.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** Everything of an answer a caller can see, but the Date header. */
async function answerOf(response: Response) {
  const headers = [...response.headers].filter(
    ([name]) => name !== "date" && name !== "x-request-id",
  );
  return {
    status: response.status,
    headers,
    body: Buffer.from(await response.arrayBuffer()).toString("hex"),
  };
}

for (const engine of testEngines()) {
  describe(`every bad session token gets the same answer (${engine})`, () => {
    let identity: TestIdentity;
    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(() => identity.close());

    it("is byte-identical for expired, tampered, foreign-audience, revoked-key, key-shaped and random tokens", async () => {
      const partner = await identity.partner();
      const other = await identity.partner();
      const user = await identity.userKey();
      const revokedUser = await identity.userKey();

      const expired = await identity.token(user.key);
      const valid = await identity.token(user.key);
      const tampered = `${valid.slice(0, 20)}${valid[20] === "A" ? "B" : "A"}${valid.slice(21)}`;
      const forOther = await identity.token(user.key, other.id);
      const fromRevoked = await identity.token(revokedUser.key);
      await revokeKey(identity.ctx, "user", revokedUser.id);
      identity.advance(300_000); // `expired` (and `valid`) are now past their 300 s
      const stillValid = await identity.token(user.key);
      const tamperedFresh = `${stillValid.slice(0, -1)}${stillValid.endsWith("A") ? "B" : "A"}`;

      const badTokens = {
        expired,
        tampered,
        tamperedFresh,
        forOther,
        fromRevoked,
        userKey: user.key,
        partnerKey: partner.key,
        random: `aps_${randomBytes(60).toString("base64url")}`,
        prefixOnly: "aps_",
        noPrefix: randomBytes(40).toString("base64url"),
        unicode: "aps_ßü\u202e",
      };
      const answers: Record<string, unknown> = {};
      for (const [kind, token] of Object.entries(badTokens)) {
        answers[kind] = await answerOf(
          await identity.verify(`Bearer ${partner.key}`, JSON.stringify({ sessionToken: token })),
        );
      }
      const first = answers.expired as { status: number; body: string };
      assert.equal(first.status, 401);
      assert.equal(
        Buffer.from(first.body, "hex").toString(),
        '{"error":"Invalid or expired session token","code":"session_token_invalid"}',
      );
      for (const [kind, answer] of Object.entries(answers)) {
        assert.deepEqual(answer, first, `${kind} is answered like every other bad token`);
      }
      // The control: the fresh token itself still verifies, so the differences above are real.
      const good = await identity.verify(
        `Bearer ${partner.key}`,
        JSON.stringify({ sessionToken: stillValid }),
      );
      assert.equal(good.status, 200);
    });
  });
}

/** The median of `samples`. */
function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

for (const engine of testEngines()) {
  describe(`the time of a refusal tells nothing (${engine})`, () => {
    it("refuses forged, expired, revoked-key and foreign tokens in the same time", async () => {
      // This property is about time itself, so it is measured: each kind is refused many times,
      // interleaved, and the medians compared with a wide margin (a forged token once cost its
      // decryption on every try while a real one was remembered: several times as long).
      const identity = await openTestIdentity(engine);
      try {
        const partner = await identity.partner();
        const other = await identity.partner();
        const user = await identity.userKey();
        const revoked = await identity.userKey();
        const expired = await identity.token(user.key);
        const fromRevoked = await identity.token(revoked.key);
        const forOther = await identity.token(user.key, other.id);
        await revokeKey(identity.ctx, "user", revoked.id);
        identity.advance(300_000);
        const live = await identity.token(user.key);
        // A forgery that gets as far as the cipher: the right version and key id, a wrong tag.
        const sealed = Buffer.from(live.slice(4), "base64url");
        sealed[sealed.length - 1] = (sealed.at(-1) as number) ^ 1;
        const forged = `aps_${sealed.toString("base64url")}`;
        const kinds = { forged, expired, fromRevoked, forOther };
        const samples: Record<string, number[]> = {
          forged: [],
          expired: [],
          fromRevoked: [],
          forOther: [],
        };
        for (let round = 0; round < 600; round++) {
          for (const [kind, token] of Object.entries(kinds)) {
            const started = process.hrtime.bigint();
            const result = await verifySessionToken(identity.ctx, partner.key, token);
            (samples[kind] as number[]).push(Number(process.hrtime.bigint() - started));
            assert.equal(result.ok, false);
          }
        }
        const medians = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
        const values = Object.values(medians);
        const spread = Math.max(...values) / Math.min(...values);
        assert.ok(spread < 1.5, `medians in ns: ${JSON.stringify(medians)}`);
      } finally {
        await identity.close();
      }
    });
  });
}
