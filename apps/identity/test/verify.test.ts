import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { revokeKey } from "../src/domain/credentials.ts";
import { generateKey } from "../src/domain/keys.ts";
import { ERRORS } from "../src/http/errors.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const body = (sessionToken: unknown) => JSON.stringify({ sessionToken });

/** A refusal: its status, its message to the letter, and the code the error table gives it. */
async function expectError(response: Response, status: number, error: string) {
  assert.equal(response.status, status);
  const refusal = Object.values(ERRORS).find((def) => def.message === error);
  assert.ok(refusal, `"${error}" is in the error table`);
  assert.deepEqual(await response.json(), { error, code: refusal.code });
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  if (status === 401) assert.equal(response.headers.get("www-authenticate"), "Bearer");
}

for (const engine of testEngines()) {
  describe(`POST /api/verify (${engine})`, () => {
    let identity: TestIdentity;
    let partner: Awaited<ReturnType<TestIdentity["partner"]>>;
    let userKey: Awaited<ReturnType<TestIdentity["userKey"]>>;
    let email: string;

    before(async () => {
      identity = await openTestIdentity(engine);
      const account = await identity.account("Ada.Lovelace+agents@Example.COM");
      email = account.email;
      userKey = await identity.userKey(account.id);
      partner = await identity.partner();
    });
    after(() => identity.close());

    const bearer = () => `Bearer ${partner.key}`;

    describe("with a valid partner key and a valid token", () => {
      it("answers 200 with exactly the canonical email", async () => {
        const token = await identity.token(userKey.key);
        const response = await identity.verify(bearer(), body(token));
        assert.equal(response.status, 200);
        assert.deepEqual(await response.json(), { email: "ada.lovelace+agents@example.com" });
        assert.equal(email, "ada.lovelace+agents@example.com");
      });

      it("says no-store and when the token expires", async () => {
        const minted = await identity.mint(userKey.key);
        const { sessionToken, expiresAt } = (await minted.json()) as Record<string, string>;
        const response = await identity.verify(bearer(), body(sessionToken));
        assert.equal(response.headers.get("cache-control"), "no-store");
        assert.equal(response.headers.get("agentpass-token-expires-at"), expiresAt);
        assert.equal(expiresAt, new Date(identity.now() + 300_000).toISOString());
      });

      it("parses the body as JSON whatever the Content-Type", async () => {
        const token = await identity.token(userKey.key);
        const response = await identity.app.request("/api/verify", {
          method: "POST",
          headers: { authorization: bearer(), "content-type": "text/plain" },
          body: body(token),
        });
        assert.equal(response.status, 200);
      });

      it("ignores unknown fields in the body", async () => {
        const token = await identity.token(userKey.key);
        const response = await identity.verify(
          bearer(),
          JSON.stringify({ sessionToken: token, x: 1 }),
        );
        assert.equal(response.status, 200);
      });
    });

    describe("the Authorization header", () => {
      for (const [label, header] of [
        ["absent", null],
        ["another scheme", `Basic ${Buffer.from("a:b").toString("base64")}`],
        ["lowercase bearer", "bearer apk_x"],
        ["Bearer without a space", "Bearerapk_x"],
        ["empty", ""],
      ] as const) {
        it(`answers 401 Missing or invalid partner key when ${label}`, async () => {
          await expectError(
            await identity.verify(header, body("aps_x")),
            401,
            "Missing or invalid partner key",
          );
        });
      }

      for (const header of ["Bearer", "Bearer ", "Bearer    "]) {
        it(`answers 401 Missing partner key for ${JSON.stringify(header)}`, async () => {
          await expectError(
            await identity.verify(header, body("aps_x")),
            401,
            "Missing partner key",
          );
        });
      }
    });

    describe("the body", () => {
      for (const raw of ["", "not json", "{", '{"sessionToken":', "\u0000"]) {
        it(`answers 400 Invalid JSON body for ${JSON.stringify(raw)}`, async () => {
          await expectError(await identity.verify(bearer(), raw), 400, "Invalid JSON body");
        });
      }

      for (const raw of [
        "{}",
        "[]",
        "null",
        "42",
        '"aps_x"',
        body(42),
        body(null),
        body(""),
        body(["a"]),
        body({}),
      ]) {
        it(`answers 400 Missing or invalid sessionToken for ${raw}`, async () => {
          await expectError(
            await identity.verify(bearer(), raw),
            400,
            "Missing or invalid sessionToken",
          );
        });
      }

      it("answers 413 for a body over 64 KiB", async () => {
        await expectError(
          await identity.verify(bearer(), body("a".repeat(70_000))),
          413,
          "Request body too large",
        );
      });
    });

    describe("the partner key", () => {
      const invalid = {
        "a random string": "hello",
        "a well-formed key nobody was given": generateKey("partner"),
        "a partner key with one character changed": "",
        "a user key": "",
      };
      for (const label of Object.keys(invalid)) {
        it(`answers 401 Invalid partner key for ${label}`, async () => {
          let key = invalid[label as keyof typeof invalid];
          if (label === "a user key") key = userKey.key;
          if (label.includes("one character"))
            key = `${partner.key.slice(0, 10)}${partner.key[10] === "a" ? "b" : "a"}${partner.key.slice(11)}`;
          const token = await identity.token(userKey.key);
          await expectError(
            await identity.verify(`Bearer ${key}`, body(token)),
            401,
            "Invalid partner key",
          );
        });
      }

      it("answers 403 Partner key has been revoked on the very next request", async () => {
        const own = await identity.partner();
        const token = await identity.token(userKey.key);
        assert.equal((await identity.verify(`Bearer ${own.key}`, body(token))).status, 200);
        await revokeKey(identity.ctx, "partner", own.keyId);
        await expectError(
          await identity.verify(`Bearer ${own.key}`, body(token)),
          403,
          "Partner key has been revoked",
        );
      });

      it("keeps the other keys of the same partner working", async () => {
        const own = await identity.partner();
        const { issueKey } = await import("../src/domain/credentials.ts");
        const second = await issueKey(identity.ctx, "partner", own.id, "second");
        assert.ok(second.ok);
        await revokeKey(identity.ctx, "partner", own.keyId);
        const token = await identity.token(userKey.key);
        assert.equal((await identity.verify(`Bearer ${second.key}`, body(token))).status, 200);
      });
    });

    describe("the session token", () => {
      const invalidToken = async (token: string, key = partner.key) => {
        const response = await identity.verify(`Bearer ${key}`, body(token));
        await expectError(response, 401, "Invalid or expired session token");
      };

      it("verifies at 299 s and not at 300 s", async () => {
        const token = await identity.token(userKey.key);
        identity.advance(299_999);
        assert.equal((await identity.verify(bearer(), body(token))).status, 200);
        identity.advance(1);
        await invalidToken(token);
      });

      it("rejects a random string, a user key and a partner key passed as a token", async () => {
        await invalidToken("aps_definitely-not-a-token");
        await invalidToken(userKey.key);
        await invalidToken(partner.key);
      });

      it("rejects a token with any character changed", async () => {
        const token = await identity.token(userKey.key);
        for (let i = 4; i < token.length; i += 7) {
          const swapped = token[i] === "A" ? "B" : "A";
          await invalidToken(token.slice(0, i) + swapped + token.slice(i + 1));
        }
      });

      it("rejects every token of a user key once it is revoked", async () => {
        const key = await identity.userKey();
        const token = await identity.token(key.key);
        assert.equal((await identity.verify(bearer(), body(token))).status, 200);
        await revokeKey(identity.ctx, "user", key.id);
        await invalidToken(token);
      });

      it("lets only the bound partner verify an audience-bound token", async () => {
        const other = await identity.partner();
        const token = await identity.token(userKey.key, partner.id);
        assert.equal((await identity.verify(bearer(), body(token))).status, 200);
        await invalidToken(token, other.key);
      });

      it("gives byte-identical answers for every kind of bad token", async () => {
        const other = await identity.partner();
        const revoked = await identity.userKey();
        const revokedToken = await identity.token(revoked.key);
        await revokeKey(identity.ctx, "user", revoked.id);
        const expired = await identity.token(userKey.key);
        const bound = await identity.token(userKey.key, other.id);
        identity.advance(300_000);
        const fresh = await identity.token(userKey.key);
        const cases = [
          expired,
          bound,
          revokedToken,
          `${fresh.slice(0, -2)}AA`,
          "random",
          userKey.key,
        ];
        const answers = await Promise.all(
          cases.map(async (token) => {
            const response = await identity.verify(bearer(), body(token));
            return {
              status: response.status,
              // Every answer has its own request id, and its date is the second it was sent in
              // (the sends may straddle one); everything else is the same.
              headers: [...response.headers]
                .filter(([name]) => name !== "x-request-id")
                .map(([name, value]) => [name, name === "date" ? "(its second)" : value]),
              text: await response.text(),
            };
          }),
        );
        for (const answer of answers) assert.deepEqual(answer, answers[0]);
        assert.equal(answers[0]?.status, 401);
      });
    });

    describe("check order", () => {
      it("judges the Authorization header before the body", async () => {
        await expectError(
          await identity.verify(null, "not json"),
          401,
          "Missing or invalid partner key",
        );
      });
      it("judges the body before the partner key", async () => {
        await expectError(
          await identity.verify("Bearer nope", "not json"),
          400,
          "Invalid JSON body",
        );
        await expectError(
          await identity.verify("Bearer nope", "{}"),
          400,
          "Missing or invalid sessionToken",
        );
      });
      it("judges the partner key before the token", async () => {
        await expectError(
          await identity.verify("Bearer nope", body("bad")),
          401,
          "Invalid partner key",
        );
        const own = await identity.partner();
        await revokeKey(identity.ctx, "partner", own.keyId);
        await expectError(
          await identity.verify(`Bearer ${own.key}`, body("bad")),
          403,
          "Partner key has been revoked",
        );
      });
    });

    describe("last use of keys", () => {
      it("is recorded in a later batch, not during the request", async () => {
        const own = await identity.partner();
        const token = await identity.token(userKey.key);
        assert.equal((await identity.verify(`Bearer ${own.key}`, body(token))).status, 200);
        const before = await identity.ctx.store.findKeyById("partner_keys", own.keyId);
        assert.equal(before?.lastUsedAt, null);
        await identity.ctx.keyUsage.flush();
        const after = await identity.ctx.store.findKeyById("partner_keys", own.keyId);
        assert.equal(after?.lastUsedAt, identity.now());
      });
    });
  });
}
