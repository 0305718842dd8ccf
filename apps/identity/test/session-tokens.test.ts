import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { revokeKey } from "../src/domain/credentials.ts";
import { generateKey } from "../src/domain/keys.ts";
import { ERRORS } from "../src/http/errors.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** A refusal: its status, its message to the letter, and the code the error table gives it. */
async function expectError(response: Response, status: number, error: string) {
  assert.equal(response.status, status);
  const refusal = Object.values(ERRORS).find((def) => def.message === error);
  assert.ok(refusal, `"${error}" is in the error table`);
  assert.deepEqual(await response.json(), { error, code: refusal.code });
  if (status === 401) assert.equal(response.headers.get("www-authenticate"), "Bearer");
}

for (const engine of testEngines()) {
  describe(`POST /api/session-tokens (${engine})`, () => {
    let identity: TestIdentity;
    let userKey: Awaited<ReturnType<TestIdentity["userKey"]>>;

    before(async () => {
      identity = await openTestIdentity(engine);
      userKey = await identity.userKey();
    });
    after(() => identity.close());

    it("answers 201 with an aps_ token and its expiry 300 s from now", async () => {
      const response = await identity.mint(userKey.key);
      assert.equal(response.status, 201);
      assert.equal(response.headers.get("cache-control"), "no-store");
      const json = (await response.json()) as Record<string, string>;
      assert.deepEqual(Object.keys(json).sort(), ["expiresAt", "sessionToken"]);
      assert.match(json.sessionToken ?? "", /^aps_[A-Za-z0-9_-]+$/);
      assert.equal(json.expiresAt, new Date(identity.now() + 300_000).toISOString());
    });

    it("mints a different token every time", async () => {
      const tokens = new Set<string>();
      for (let i = 0; i < 20; i++) tokens.add(await identity.token(userKey.key));
      assert.equal(tokens.size, 20);
    });

    it("honours SESSION_TOKEN_TTL_SECONDS", async () => {
      const short = await openTestIdentity("sqlite", { SESSION_TOKEN_TTL_SECONDS: "2" });
      try {
        const key = await short.userKey();
        const json = (await (await short.mint(key.key)).json()) as { expiresAt: string };
        assert.equal(json.expiresAt, new Date(short.now() + 2000).toISOString());
      } finally {
        await short.close();
      }
    });

    it("lets one account hold several working keys", async () => {
      const second = await identity.userKey(userKey.accountId);
      assert.equal((await identity.mint(userKey.key)).status, 201);
      assert.equal((await identity.mint(second.key)).status, 201);
    });

    describe("rejects the user key", () => {
      it("when the header is absent: 401 Missing or invalid user key", async () => {
        await expectError(await identity.mint(null), 401, "Missing or invalid user key");
      });
      it("when the header is a bare Bearer: 401 Missing user key", async () => {
        const response = await identity.app.request("/api/session-tokens", {
          method: "POST",
          headers: { authorization: "Bearer" },
        });
        await expectError(response, 401, "Missing user key");
      });
      it("when it is malformed, unknown or a partner key: 401 Invalid user key", async () => {
        const tampered = `${userKey.key.slice(0, -1)}${userKey.key.endsWith("a") ? "b" : "a"}`;
        for (const key of ["apu_short", generateKey("user"), generateKey("partner"), tampered]) {
          await expectError(await identity.mint(key), 401, "Invalid user key");
        }
      });
      it("when it is revoked: 403 User key has been revoked", async () => {
        const key = await identity.userKey();
        await revokeKey(identity.ctx, "user", key.id);
        await expectError(await identity.mint(key.key), 403, "User key has been revoked");
      });
    });

    describe("the body", () => {
      it("may be absent or an empty object", async () => {
        assert.equal((await identity.mint(userKey.key)).status, 201);
        assert.equal((await identity.mint(userKey.key, "{}")).status, 201);
        assert.equal((await identity.mint(userKey.key, '{"audience":null}')).status, 201);
      });
      it("answers 400 Invalid JSON body when it is not a JSON object", async () => {
        for (const raw of ["nope", "{", "[]", "42", '"x"']) {
          await expectError(await identity.mint(userKey.key, raw), 400, "Invalid JSON body");
        }
      });
      it("answers 400 Invalid audience for a non-string or unknown partner id", async () => {
        for (const audience of [42, true, "not-a-uuid", crypto.randomUUID(), { id: 1 }]) {
          const raw = JSON.stringify({ audience });
          await expectError(await identity.mint(userKey.key, raw), 400, "Invalid audience");
        }
      });
      it("judges the user key before the audience", async () => {
        const raw = JSON.stringify({ audience: crypto.randomUUID() });
        await expectError(await identity.mint("apu_nope", raw), 401, "Invalid user key");
      });
      it("answers 413 for a body over 64 KiB", async () => {
        const raw = JSON.stringify({ audience: "x".repeat(70_000) });
        await expectError(await identity.mint(userKey.key, raw), 413, "Request body too large");
      });
    });

    it("records the key's last use in a later batch, never on the request", async () => {
      const key = await identity.userKey();
      await identity.token(key.key);
      assert.equal((await identity.ctx.store.findKeyById("user_keys", key.id))?.lastUsedAt, null);
      await identity.ctx.keyUsage.flush();
      assert.equal(
        (await identity.ctx.store.findKeyById("user_keys", key.id))?.lastUsedAt,
        identity.now(),
      );
    });
  });
}
