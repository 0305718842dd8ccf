import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { isoTime } from "../src/iso-time.ts";

const RUNS = Number(process.env.PROPERTY_RUNS ?? 20_000);
const expected = (ms: number) => new Date(ms).toISOString();

describe("isoTime", () => {
  it("writes what toISOString writes, for every valid instant", () => {
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => {
        assert.equal(isoTime(ms), expected(ms));
      }),
      { numRuns: RUNS },
    );
  });

  it("writes what toISOString writes around now and at every edge of a day and a year", () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1960, 0), max: Date.UTC(2100, 0) }), (ms) => {
        assert.equal(isoTime(ms), expected(ms));
      }),
      { numRuns: RUNS },
    );
    const edges = [0, -1, 1, 999, 1000, 86_399_999, 86_400_000, -86_400_000, -86_400_001];
    for (const year of [0, 1, 1969, 1970, 2000, 2026, 9999, 10000]) {
      const start = Date.UTC(year, 0, 1);
      edges.push(start - 1, start, start + 1);
    }
    edges.push(-62_167_219_200_001, -62_167_219_200_000, 253_402_300_799_999, 253_402_300_800_000);
    for (const ms of edges) assert.equal(isoTime(ms), expected(ms), String(ms));
  });

  it("hands fractions to toISOString, which truncates them the same way every time", () => {
    for (const ms of [0.5, -0.5, 1234.9, 1_700_000_000_000.25]) {
      assert.equal(isoTime(ms), expected(ms));
    }
  });
});
