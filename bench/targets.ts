import type { Measurement } from "./measure.ts";

type Row = Measurement & { name: string; ratio?: number | undefined };

export interface TargetVerdict {
  target: string;
  /** What this run measured, as printed; undefined when the run did not measure it. */
  measured: string | undefined;
  met: boolean | undefined;
}

/** The rates the targets take over another's than a ceiling's: medians of round-by-round ratios. */
export interface Comparisons {
  /** verify-valid over oidc-provider's introspection (the peer). */
  verifyOverPeer: number | undefined;
  /** introspection over the peer's. */
  introspectionOverPeer: number | undefined;
  /** The service's search over its database's bound for the same statement (search-bound.ts). */
  searchOverBound: number | undefined;
}

/**
 * The performance targets (issue 44), judged on this run's medians, so every run says where it
 * stands. The same floors on both engines: PostgreSQL is where production runs. Every one is a
 * share of another rate measured in the same round (the bare or sized ceiling, the peer, the
 * search's bound), never an absolute rate or time, which are the machine's. Printed and kept in
 * the JSON only: the bench never fails on a timing (CI's smoke run measures nothing worth
 * judging).
 */
export function judgeTargets(rows: Row[], comparisons: Comparisons): TargetVerdict[] {
  const ratio = (name: string) => rows.find((candidate) => candidate.name === name)?.ratio;
  return [
    atLeast("verify ≥ 0.5 × ceiling", ratio("verify-valid"), 0.5),
    atLeast("verify ≥ 3 × oidc-provider introspection", comparisons.verifyOverPeer, 3),
    atLeast("introspection ≥ 0.5 × ceiling", ratio("introspect"), 0.5),
    atLeast(
      "introspection ≥ 3 × oidc-provider introspection",
      comparisons.introspectionOverPeer,
      3,
    ),
    atLeast("mint ≥ 0.35 × ceiling", ratio("mint"), 0.35),
    atLeast("notes list-20 ≥ 0.2 × its sized ceiling", ratio("notes-list-20"), 0.2),
    atLeast("search ≥ 0.8 × its database's bound", comparisons.searchOverBound, 0.8),
  ];
}

export function printTargets(verdicts: TargetVerdict[]): void {
  console.log("\nTargets in this run (informative; nothing is asserted):");
  for (const { target, measured, met } of verdicts) {
    console.log(
      measured === undefined
        ? `  –       ${target}: not measured`
        : `  ${met ? "met   " : "missed"}  ${target}: ${measured}`,
    );
  }
}

/**
 * A ratio to two decimals, rounded down, as every ratio the targets judge is printed: one just
 * under a floor is never shown on it.
 */
export function ratioText(value: number): string {
  return (Math.floor(value * 100 + 1e-9) / 100).toFixed(2);
}

/** Met at `floor` or above. */
function atLeast(target: string, value: number | undefined, floor: number): TargetVerdict {
  return value === undefined || Number.isNaN(value)
    ? { target, measured: undefined, met: undefined }
    : { target, measured: `${ratioText(value)} ×`, met: value >= floor };
}
