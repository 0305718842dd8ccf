import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { displayableName, hasHiddenCharacters } from "../src/domain/display-names.ts";
import { createPartner, updatePartner } from "../src/domain/partners.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** Names drawn as something else than they say, or as a blank. */
const DECEPTIVE = [
  "\u202E buHtiG", // right-to-left override: drawn as "GitHub"
  "Git\u2066buH\u2069", // isolate
  "Git\u200BHub", // zero-width space
  "Git\u200DHub", // zero-width joiner
  "\u2800", // blank braille pattern
  "\u3164", // Hangul filler
  "Git\u2028Hub", // line separator
  "tab\there",
];

describe("the rule for names people decide on", () => {
  it("finds bidi controls, zero-width and blank-looking characters, and strips them for display", () => {
    for (const name of DECEPTIVE) assert.ok(hasHiddenCharacters(name), JSON.stringify(name));
    assert.equal(hasHiddenCharacters("Ünïcödé Wëather — 天気 API"), false);
    assert.equal(displayableName("\u202E buHtiG"), "buHtiG");
    assert.equal(displayableName("  Git\u200BHub \n Notes "), "GitHub Notes");
    assert.equal(displayableName("\u2800\u3164"), "");
  });
});

for (const engine of testEngines()) {
  describe(`partner names (${engine})`, () => {
    let identity: TestIdentity;
    let ownerAccountId: string;
    before(async () => {
      identity = await openTestIdentity(engine);
      ownerAccountId = (await identity.account()).id;
    });
    after(async () => {
      await identity.close();
    });

    it("refuses a new partner whose name carries bidi or invisible characters", async () => {
      for (const name of DECEPTIVE) {
        const created = await createPartner(identity.ctx, { ownerAccountId, name });
        assert.equal(created.ok, false, JSON.stringify(name));
        assert.equal(created.ok ? "" : created.code, "INVALID_PARTNER");
      }
      assert.deepEqual(await identity.ctx.store.listPartnersOwnedBy(ownerAccountId), []);
    });

    it("refuses a rename to such a name and keeps the name it had", async () => {
      const created = await createPartner(identity.ctx, { ownerAccountId, name: "Weather API" });
      assert.ok(created.ok);
      for (const name of DECEPTIVE) {
        const renamed = await updatePartner(identity.ctx, created.partner, { name });
        assert.deepEqual(
          renamed,
          {
            ok: false,
            code: "INVALID_PARTNER",
            reason: "Name must not contain invisible or direction-changing characters",
          },
          JSON.stringify(name),
        );
      }
      const stored = await identity.ctx.store.findPartner(created.partner.id);
      assert.equal(stored?.name, "Weather API");

      const renamed = await updatePartner(identity.ctx, created.partner, { name: "Wetter 天気" });
      assert.ok(renamed.ok);
      assert.equal((await identity.ctx.store.findPartner(created.partner.id))?.name, "Wetter 天気");
    });
  });
}
