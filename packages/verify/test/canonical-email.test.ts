import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { canonicalizeEmail } from "../src/index.ts";

const canonical = (input: unknown) => {
  const result = canonicalizeEmail(input);
  return result.ok ? result.email : null;
};

describe("canonicalizeEmail", () => {
  it("lowercases ASCII in both parts, trims, and keeps dots and plus-tags", () => {
    assert.equal(
      canonical("  Ada.Lovelace+Agents@Example.COM \n"),
      "ada.lovelace+agents@example.com",
    );
    assert.notEqual(canonical("a.b+x@example.com"), canonical("ab@example.com"));
  });

  it("gives precomposed and decomposed forms the same address (NFC)", () => {
    assert.equal(canonical("e\u0301@example.com"), "\u00e9@example.com");
    assert.equal(canonical("\u00e9@example.com"), "\u00e9@example.com");
  });

  it("converts IDN domains to their ASCII form, whatever their case or width", () => {
    assert.equal(canonical("a@bücher.example"), "a@xn--bcher-kva.example");
    assert.equal(canonical("a@BÜCHER.EXAMPLE"), "a@xn--bcher-kva.example");
    assert.equal(canonical("a@ｅｘａｍｐｌｅ.com"), "a@example.com");
    assert.equal(canonical("a@example。com"), "a@example.com");
  });

  it("never applies Unicode case mapping to the local part", () => {
    assert.equal(canonical("ı@example.com"), "ı@example.com");
    assert.equal(canonical("İ@example.com"), "İ@example.com");
    assert.equal(canonical("STRAẞE@example.com"), "straẞe@example.com");
    assert.equal(canonical("ß@example.com"), "ß@example.com");
  });

  it("keeps look-alikes and fullwidth letters in the local part distinct", () => {
    const cyrillic = canonical("p\u0430ypal@example.com"); // Cyrillic а
    assert.equal(cyrillic, "p\u0430ypal@example.com");
    assert.notEqual(cyrillic, canonical("paypal@example.com"));
    assert.equal(canonical("ａ@example.com"), "ａ@example.com");
    assert.notEqual(canonical("ａ@example.com"), canonical("a@example.com"));
    assert.equal(canonical("a@p\u0430ypal.com"), "a@xn--pypal-4ve.com");
  });

  it("refuses what is not an address a person signs in with", () => {
    for (const input of [
      "",
      "plain",
      "@example.com",
      "a@",
      "a b@example.com",
      "a@exa mple.com",
      "a\u0000b@example.com",
      "a\u200bb@example.com",
      ".a@example.com",
      "a.@example.com",
      "a..b@example.com",
      'a"b@example.com',
      "a@b@example.com",
      "a@localhost",
      "a@127.0.0.1",
      "a@[127.0.0.1]",
      "a@example.com.",
      "a@-example.com",
      "a@example-.com",
      "a@exa_mple.com",
      "a@x..com",
      "a@ex%41mple.com",
      "a@example.com:25",
      "a@example.com/path",
      `${"a".repeat(65)}@example.com`,
      `a@${"b".repeat(250)}.com`,
      "x".repeat(1_000_000),
    ]) {
      const result = canonicalizeEmail(input);
      assert.equal(result.ok, false, JSON.stringify(input.slice(0, 40)));
      assert.ok(!result.ok && result.reason.length > 0);
    }
  });

  it("refuses non-strings without throwing", () => {
    for (const input of [undefined, null, 42, {}, ["a@example.com"], Symbol("x")]) {
      assert.deepEqual(canonicalizeEmail(input), { ok: false, reason: "Email must be a string" });
    }
  });

  it("is idempotent", () => {
    for (const input of [
      " Ada@Example.COM",
      "e\u0301@BÜCHER.example",
      "ı+tag@ｅｘａｍｐｌｅ.com",
      "\u212Aelvin@example.com",
      "a.b+c@xn--bcher-kva.example",
    ]) {
      const once = canonical(input);
      assert.ok(once, input);
      assert.equal(canonical(once), once);
    }
  });
});
