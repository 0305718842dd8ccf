import type { Measurement } from "./measure.ts";

type Row = Measurement & { name: string; ratio?: number | undefined };

export interface TargetVerdict {
  target: string;
  /** What this run measured, as printed; undefined when the run did not measure it. */
  measured: string | undefined;
  met: boolean | undefined;
}

/**
 * The performance targets, judged on this run's medians, so every run says where it stands.
 * Printed and kept in the JSON only: the bench never fails on a timing (CI's smoke run measures
 * nothing worth judging).
 */
export function judgeTargets(
  rows: Row[],
  options: { engine: string; connections: number; verifyOverPeer: number | undefined },
): TargetVerdict[] {
  const row = (name: string) => rows.find((candidate) => candidate.name === name);
  const verify = row("verify-valid");
  const identityRows = rows.filter(
    (candidate) =>
      candidate.name.startsWith("verify") ||
      ["mint", "introspect", "refresh"].includes(candidate.name),
  );
  const peakRss = identityRows.length
    ? Math.max(...identityRows.map((candidate) => candidate.peakRssMb))
    : undefined;
  const memory = atMost("identity RSS ≤ 150 MB", peakRss, 150, "MB");
  // The same floors on both engines: PostgreSQL is where production runs.
  const search = row("notes-search");
  return [
    atLeast("verify ≥ 0.7 × ceiling", verify?.ratio, 0.7, 2),
    atMost(`verify p99 ≤ 5 ms at ${options.connections} connections`, verify?.p99, 5, "ms"),
    atLeast("verify ≥ 4 × oidc-provider", options.verifyOverPeer, 4, 1),
    atLeast("mint ≥ 0.45 × ceiling", row("mint")?.ratio, 0.45, 2),
    atLeast("introspection ≥ 0.7 × ceiling", row("introspect")?.ratio, 0.7, 2),
    atLeast("notes list-20 ≥ 0.3 × ceiling", row("notes-list-20")?.ratio, 0.3, 2),
    atMost(`search p99 ≤ 50 ms at ${options.connections} connections`, search?.p99, 50, "ms"),
    atMost("search p99 ≤ 50 ms, one at a time", row("notes-search, 1 connection")?.p99, 50, "ms"),
    atLeast("POST /api/notes ≥ 0.1 × ceiling", row("notes-create")?.ratio, 0.1, 2),
    memory,
  ];
}

export function printTargets(verdicts: TargetVerdict[]): void {
  console.log("\nTargets in this run (informative; nothing is asserted):");
  for (const { target, measured, met } of verdicts) {
    if (measured === undefined) continue;
    console.log(`  ${met ? "met   " : "missed"}  ${target}: ${measured}`);
  }
}

function atLeast(
  target: string,
  value: number | undefined,
  floor: number,
  digits: number,
): TargetVerdict {
  return value === undefined || Number.isNaN(value)
    ? { target, measured: undefined, met: undefined }
    : { target, measured: `${value.toFixed(digits)} ×`, met: value >= floor };
}

function atMost(
  target: string,
  value: number | undefined,
  ceiling: number,
  unit: string,
): TargetVerdict {
  return value === undefined
    ? { target, measured: undefined, met: undefined }
    : { target, measured: `${Math.round(value * 10) / 10} ${unit}`, met: value <= ceiling };
}
