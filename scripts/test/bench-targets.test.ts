import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Measurement } from "../../bench/measure.ts";
import { judgeTargets } from "../../bench/targets.ts";

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

describe("the bench's verdict on its targets", () => {
  it("meets a target on its line and misses it just past", () => {
    const judge = (verifyRatio: number, p99: number, rss: number, peer: number) =>
      judgeTargets(
        [
          measured("verify-valid", { ratio: verifyRatio, p99, peakRssMb: rss }),
          measured("mint", { ratio: 0.5, peakRssMb: 90 }),
        ],
        { engine: "sqlite", connections: 50, verifyOverPeer: peer },
      );
    const onTheLine = judge(0.7, 5, 150, 4);
    for (const start of ["verify ≥ 0.7", "verify p99", "verify ≥ 4", "mint", "identity RSS"]) {
      assert.equal(verdictOf(onTheLine, start)?.met, true, start);
    }
    const past = judge(0.69, 6, 150.1, 3.9);
    for (const start of ["verify ≥ 0.7", "verify p99", "verify ≥ 4", "identity RSS"]) {
      assert.equal(verdictOf(past, start)?.met, false, start);
    }
    assert.equal(verdictOf(past, "identity RSS")?.measured, "150.1 MB");
  });

  it("judges nothing a run did not measure", () => {
    const verdicts = judgeTargets([], {
      engine: "sqlite",
      connections: 50,
      verifyOverPeer: undefined,
    });
    assert.ok(
      verdicts.every((verdict) => verdict.measured === undefined && verdict.met === undefined),
    );
  });

  it("holds a PostgreSQL run to the same floors as the embedded default", () => {
    const verdicts = judgeTargets(
      [
        measured("verify-valid", { ratio: 0.71 }),
        measured("mint", { ratio: 0.44 }),
        measured("introspect", { ratio: 0.7 }),
        measured("notes-create", { ratio: 0.09 }),
      ],
      { engine: "postgres", connections: 50, verifyOverPeer: undefined },
    );
    assert.equal(verdictOf(verdicts, "verify ≥ 0.7")?.met, true);
    assert.equal(verdictOf(verdicts, "mint")?.met, false);
    assert.equal(verdictOf(verdicts, "introspection")?.met, true);
    assert.equal(verdictOf(verdicts, "POST /api/notes")?.met, false);
  });
});
