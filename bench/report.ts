import type { Measurement } from "./measure.ts";
import { ratioText } from "./targets.ts";

/**
 * Prints the medians as a markdown table, each rate also as a ratio to its ceiling's (`ratio`:
 * the median of the ratios measured round by round, rounded down as the targets print it; none
 * for a row measured at other connections, nor for the search's bound). A row with no server of
 * its own to sample (the search's bound) has no RSS.
 */
export function printTable(
  rows: (Measurement & { name: string; ratio?: number | undefined })[],
  options: { engine: string; rounds: number; duration: number; connections: number; notes: number },
): void {
  const fixed = (value: number, digits = 1) => value.toFixed(digits);
  console.log(
    `\n${options.engine}, ${options.rounds} round(s) x ${options.duration} s, ${options.connections} connections, ${options.notes} notes; medians (× ceiling: the median of each round's ratio)\n`,
  );
  console.log("| scenario | req/s | × ceiling | p50 ms | p99 ms | max ms | peak RSS MB | errors |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    const ratio = row.ratio === undefined ? "–" : ratioText(row.ratio);
    console.log(
      `| ${row.name} | ${Math.round(row.requestsPerSecond)} | ${ratio} | ${row.p50} | ${row.p99} | ${row.max} | ${row.peakRssMb > 0 ? fixed(row.peakRssMb) : "–"} | ${row.errors} |`,
    );
  }
}
