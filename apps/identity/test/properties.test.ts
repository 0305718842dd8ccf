import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { generateKey, isWellFormedKey, type KeyKind } from "../src/domain/keys.ts";
import { openTestIdentity } from "./support/harness.ts";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 10_000);
const KEY_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";

describe("properties of keys and tokens", () => {
  it(`a key with any single character changed fails its checksum, before any query (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        fc.constantFrom<KeyKind>("user", "partner"),
        fc.nat(),
        fc.nat(),
        (kind, position, replacement) => {
          const key = generateKey(kind);
          const at = position % key.length;
          const options = KEY_CHARS.replace(key[at] ?? "", "");
          const changed =
            key.slice(0, at) + options[replacement % options.length] + key.slice(at + 1);
          assert.equal(isWellFormedKey(kind, key), true);
          assert.equal(isWellFormedKey(kind, changed), false, `${changed} passed`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a key of one kind never passes for the other", () => {
    fc.assert(
      fc.property(fc.constantFrom<KeyKind>("user", "partner"), (kind) => {
        assert.equal(
          isWellFormedKey(kind === "user" ? "partner" : "user", generateKey(kind)),
          false,
        );
      }),
      { numRuns: 1000 },
    );
  });

  it(`session tokens never collide (${RUNS} minted for one key within one millisecond)`, async () => {
    const identity = await openTestIdentity("sqlite", { MINTS_PER_MINUTE: String(RUNS) });
    try {
      const { key } = await identity.userKey();
      const tokens = new Set<string>();
      for (let i = 0; i < RUNS; i++) tokens.add(await identity.token(key));
      assert.equal(tokens.size, RUNS);
    } finally {
      await identity.close();
    }
  });
});
