import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines, typeErrorsIn } from "@agentpass/db/testing";
import type { Store } from "../src/store/store.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const newKey = (ownerId: string, n: number) => ({
  ownerId,
  name: `key ${n}`,
  displayPrefix: `apu_${n}`,
  secretHash: `hash-${crypto.randomUUID()}`,
  createdAt: 1000 + n,
});

describe("identity store's cached reads", () => {
  it("refuse to compile without the HotRead of beginHotRead", () => {
    const source = [
      `import type { Store } from "../store/store.ts";`,
      "export async function verify(store: Store, hash: string) {",
      "  const checked = await store.beginHotRead();",
      `  await store.findKeyByHash(checked, "partner_keys", hash);`,
      "  await store.findTokenOwner(checked, hash);",
      `  await store.findKeyByHash("partner_keys", hash);`,
      "  await store.findTokenOwner(hash);",
      "}",
    ].join("\n");
    const errors = typeErrorsIn("apps/identity/src/domain/compile-check.ts", source);
    assert.equal(errors.length, 2, errors.join("\n"));
    assert.match(errors[0] ?? "", /^6: TS2554: Expected 3 arguments, but got 2/);
    assert.match(errors[1] ?? "", /^7: TS2554: Expected 2 arguments, but got 1/);
  });
});

for (const engine of testEngines()) {
  describe(`identity store (${engine})`, () => {
    let identity: TestIdentity;
    let store: Store;

    before(async () => {
      identity = await openTestIdentity(engine);
      store = identity.ctx.store;
    });
    after(() => identity.close());

    it("creates an account once per email and finds it", async () => {
      const created = await store.createAccount("one@example.com", 5);
      assert.ok(created);
      assert.equal(await store.createAccount("one@example.com", 6), null);
      assert.deepEqual(await store.findAccountByEmail("one@example.com"), created);
      assert.equal(await store.findAccountByEmail("none@example.com"), undefined);
    });

    it("stores keys by hash only, lists them newest first, revokes each once", async () => {
      const account = await store.createAccount("keys@example.com", 1);
      assert.ok(account);
      const first = await store.insertKey("user_keys", newKey(account.id, 1));
      const second = await store.insertKey("user_keys", newKey(account.id, 2));
      const listed = await store.listKeys("user_keys", account.id);
      assert.deepEqual(
        listed.map((key) => key.id),
        [second.id, first.id],
      );
      assert.deepEqual(listed[1], first);
      assert.ok(!("secretHash" in first));

      assert.equal(await store.revokeKey("user_keys", first.id, 50), true);
      assert.equal(await store.revokeKey("user_keys", first.id, 60), false);
      assert.equal((await store.findKeyById("user_keys", first.id))?.revokedAt, 50);
      assert.equal(await store.revokeKey("user_keys", crypto.randomUUID(), 60), false);
    });

    it("finds a key by its hash with its owner and revocation", async () => {
      const account = await store.createAccount("hash@example.com", 1);
      assert.ok(account);
      const input = newKey(account.id, 3);
      const key = await store.insertKey("user_keys", input);
      const checked = await store.beginHotRead();
      assert.deepEqual(await store.findKeyByHash(checked, "user_keys", input.secretHash), {
        id: key.id,
        ownerId: account.id,
        revokedAt: null,
        clientId: null,
        audience: null,
        rotating: 0,
        dpopJkt: null,
      });
      assert.equal(await store.findKeyByHash(checked, "partner_keys", input.secretHash), undefined);
    });

    it("resolves a token's user key to the account email", async () => {
      const account = await store.createAccount("owner@example.com", 1);
      assert.ok(account);
      const key = await store.insertKey("user_keys", newKey(account.id, 4));
      const checked = await store.beginHotRead();
      assert.deepEqual(await store.findTokenOwner(checked, key.id), {
        accountId: account.id,
        email: "owner@example.com",
        revokedAt: null,
        clientId: null,
      });
      assert.equal(await store.findTokenOwner(checked, crypto.randomUUID()), undefined);
    });

    it("records last use without ever moving it back", async () => {
      const account = await store.createAccount("use@example.com", 1);
      assert.ok(account);
      const key = await store.insertKey("user_keys", newKey(account.id, 5));
      await store.recordKeyUse("user_keys", new Map([[key.id, 200]]));
      await store.recordKeyUse("user_keys", new Map([[key.id, 100]]));
      assert.equal((await store.findKeyById("user_keys", key.id))?.lastUsedAt, 200);
    });

    it("keeps partners with their listing flag", async () => {
      const owner = await store.createAccount("partner-owner@example.com", 1);
      assert.ok(owner);
      const partner = await store.createPartner({
        ownerAccountId: owner.id,
        name: "Notes",
        website: null,
        description: "d",
        listed: true,
        createdAt: 9,
      });
      assert.deepEqual(await store.findPartner(partner.id), partner);
      const key = await store.insertKey("partner_keys", newKey(partner.id, 6));
      assert.deepEqual(
        (await store.listKeys("partner_keys", partner.id)).map((k) => k.id),
        [key.id],
      );
    });

    it("adds a first sealing key only into an empty table, and a later one only while the newest is as read", async () => {
      const before = await store.listSealingKeys();
      const newest = { id: before[0]?.id ?? "", wrapped: before[0]?.wrapped ?? "" };
      const key = (id: string, createdAt: number) => ({ id, wrapped: `v1.${id}`, createdAt });
      assert.equal(await store.addSealingKey(key("aaaaaaaa", 1), null), false);
      assert.equal(
        await store.addSealingKey(key("aaaaaaaa", 1), { id: newest.id, wrapped: "v1.other" }),
        false,
      );
      assert.equal(await store.addSealingKey(key("aaaaaaaa", 1), newest), true);
      const keys = await store.listSealingKeys();
      assert.equal(keys.length, before.length + 1);
      // Newer than every other key, whatever the clock said.
      assert.deepEqual(keys[0], {
        id: "aaaaaaaa",
        secret: null,
        wrapped: "v1.aaaaaaaa",
        createdAt: (before[0]?.createdAt ?? 0) + 1,
      });
    });

    it("rewraps every key at once, or none when the keys are not exactly as read", async () => {
      const keys = await store.listSealingKeys();
      const rewrapped = (to: string) =>
        keys.map((row) => ({ id: row.id, from: row.wrapped ?? "", to: `${to}.${row.id}` }));
      assert.equal(await store.rewrapSealingKeys(rewrapped("v9").slice(1)), false);
      assert.deepEqual(await store.listSealingKeys(), keys);
      assert.equal(await store.rewrapSealingKeys(rewrapped("v9")), true);
      assert.deepEqual(
        (await store.listSealingKeys()).map((row) => row.wrapped),
        keys.map((row) => `v9.${row.id}`),
      );
    });
  });
}
