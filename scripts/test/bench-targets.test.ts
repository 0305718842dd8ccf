import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Measurement } from "../../bench/measure.ts";
import { type BenchEngine, type Comparisons, judgeTargets } from "../../bench/targets.ts";

const measured = (name: string, fields: Partial<Measurement> & { ratio?: number }) => ({
  name,
  requestsPerSecond: 1,
  p50: 1,
  p99: 1,
  max: 1,
  peakRssMb: 100,
  requests: 1,
  errors: 0,
  ...fields,
});

const verdictOf = (verdicts: ReturnType<typeof judgeTargets>, start: string) =>
  verdicts.find((verdict) => verdict.target.startsWith(start));

/** Every target's figure set to `shift` plus its floor of issue 44. */
const judgeAtFloors = (shift: number, engine: BenchEngine = "sqlite") =>
  judgeTargets(
    [
      measured("verify-valid", { ratio: 0.5 + shift }),
      measured("introspect", { ratio: 0.5 + shift }),
      measured("mint", { ratio: 0.35 + shift }),
      measured("notes-list-20", { ratio: 0.2 + shift }),
    ],
    {
      verifyOverPeer: 3 + shift,
      introspectionOverPeer: 3 + shift,
      searchOverBound: 0.8 + shift,
    },
    engine,
  );

const TARGETS = [
  "verify ≥ 0.5 × ceiling",
  "verify ≥ 3 × oidc-provider",
  "introspection ≥ 0.5 × ceiling",
  "introspection ≥ 3 × oidc-provider",
  "mint ≥ 0.35 × ceiling",
  "notes list-20 ≥ 0.2 × its sized ceiling",
  "search ≥ 0.8 × its database's bound",
];

describe("the bench's verdict on its targets", () => {
  it("judges every floor of issue 44 on SQLite, and no others", () => {
    const verdicts = judgeAtFloors(0);
    assert.equal(verdicts.length, TARGETS.length);
    for (const start of TARGETS) assert.ok(verdictOf(verdicts, start), start);
    assert.ok(verdicts.every((verdict) => verdict.kind === "floor"));
  });

  it("meets each target on its floor and misses it just under", () => {
    const onTheFloor = judgeAtFloors(0);
    const under = judgeAtFloors(-0.001);
    for (const start of TARGETS) {
      assert.equal(verdictOf(onTheFloor, start)?.met, true, start);
      assert.equal(verdictOf(under, start)?.met, false, start);
    }
  });

  it("never prints a missed ratio as its floor", () => {
    assert.equal(verdictOf(judgeAtFloors(-0.001), "search")?.measured, "0.79 ×");
    assert.equal(verdictOf(judgeAtFloors(0), "search")?.measured, "0.80 ×");
    assert.equal(verdictOf(judgeAtFloors(0), "mint")?.measured, "0.35 ×");
  });

  it("judges the search on its bound, whatever its latency", () => {
    const comparisons: Comparisons = {
      verifyOverPeer: undefined,
      introspectionOverPeer: undefined,
      searchOverBound: 0.85,
    };
    const verdicts = judgeTargets(
      [measured("notes-search", { p99: 400, ratio: 0.01 })],
      comparisons,
      "sqlite",
    );
    assert.equal(verdictOf(verdicts, "search")?.met, true);
  });

  it("judges nothing a run did not measure (no pgbench: no bound)", () => {
    for (const engine of ["sqlite", "postgres"] as const) {
      const verdicts = judgeTargets(
        [],
        { verifyOverPeer: undefined, introspectionOverPeer: undefined, searchOverBound: undefined },
        engine,
      );
      assert.ok(
        verdicts.every((verdict) => verdict.measured === undefined && verdict.met === undefined),
        engine,
      );
    }
  });
});

describe("the bench's verdict on PostgreSQL", () => {
  const FLOORS = ["verify ≥ 3 × oidc-provider", "introspection ≥ 3 × oidc-provider"];
  const RECORDED = [
    "verify × ceiling",
    "introspection × ceiling",
    "mint × ceiling",
    "notes list-20 × its sized ceiling",
    "search × its database's bound",
  ];

  it("judges verify and introspection over oidc-provider only", () => {
    const verdicts = judgeAtFloors(0, "postgres");
    const floors = verdicts.filter((verdict) => verdict.kind === "floor");
    assert.equal(floors.length, FLOORS.length);
    for (const start of FLOORS) {
      assert.equal(verdictOf(verdicts, start)?.met, true, start);
      assert.equal(verdictOf(judgeAtFloors(-0.001, "postgres"), start)?.met, false, start);
    }
  });

  it("records the ceiling ratios, the notes list and the search without a floor", () => {
    const verdicts = judgeAtFloors(-0.1, "postgres");
    assert.equal(verdicts.length, FLOORS.length + RECORDED.length);
    for (const start of RECORDED) {
      const verdict = verdictOf(verdicts, start);
      assert.equal(verdict?.kind, "recorded", start);
      assert.equal(verdict?.met, undefined, start);
      assert.match(verdict?.measured ?? "", /^\d\.\d\d ×$/, start);
    }
    assert.equal(verdictOf(verdicts, "search")?.measured, "0.70 ×");
  });
});
