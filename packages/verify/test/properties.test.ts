import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { canonicalizeEmail } from "../src/canonical-email.ts";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 10_000);

/** Addresses with the parts canonicalisation cares about: case, Unicode forms, IDN, spaces. */
const messyEmail = fc
  .tuple(
    fc.oneof(fc.emailAddress(), fc.string({ unit: "binary", maxLength: 80 })),
    fc.constantFrom("", " ", "\t", "\u00a0"),
    fc.constantFrom("", "É", "e\u0301", "ß", "İ", "\u212a", "Ｆ", "ı"),
    fc.constantFrom("", "bücher.de", "EXAMPLE.COM", "xn--bcher-kva.de", "пример.рф"),
  )
  .map(([base, space, extra, domain]) => {
    const [local = "", host = ""] = base.split("@");
    return `${space}${local}${extra}@${domain || host}${space}`;
  });

describe("canonical emails", () => {
  it(`are idempotent: canonicalising a canonical address gives it back (${RUNS} runs)`, () => {
    fc.assert(
      fc.property(
        fc.oneof(messyEmail, fc.string({ unit: "grapheme", maxLength: 300 })),
        (input) => {
          const once = canonicalizeEmail(input);
          if (!once.ok) return;
          const twice = canonicalizeEmail(once.email);
          assert.deepEqual(twice, once, `${JSON.stringify(input)} → ${once.email}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("never throw, whatever they are given", () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        const result = canonicalizeEmail(input);
        assert.equal(typeof result.ok, "boolean");
      }),
      { numRuns: 2000 },
    );
  });
});
