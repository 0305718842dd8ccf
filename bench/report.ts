import type { Measurement } from "./measure.ts";

/**
 * Prints the medians as a markdown table, each rate also as a ratio to its ceiling's: the
 * ceiling row it names, else the first; none for a row measured at other connections ("none").
 */
export function printTable(
  rows: (Measurement & { name: string; ceiling?: string | undefined })[],
  options: { engine: string; rounds: number; duration: number; connections: number; notes: number },
): void {
  const ceilings = rows.filter((row) => row.name.startsWith("ceiling"));
  const ceilingOf = (row: { ceiling?: string | undefined }) =>
    row.ceiling === "none"
      ? 0
      : ((ceilings.find((candidate) => candidate.name === row.ceiling) ?? ceilings[0])
          ?.requestsPerSecond ?? 0);
  const fixed = (value: number, digits = 1) => value.toFixed(digits);
  console.log(
    `\n${options.engine}, ${options.rounds} round(s) x ${options.duration} s, ${options.connections} connections, ${options.notes} notes; medians\n`,
  );
  console.log("| scenario | req/s | × ceiling | p50 ms | p99 ms | max ms | peak RSS MB | errors |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    const ceiling = ceilingOf(row);
    const ratio = ceiling > 0 ? fixed(row.requestsPerSecond / ceiling, 2) : "–";
    console.log(
      `| ${row.name} | ${Math.round(row.requestsPerSecond)} | ${ratio} | ${row.p50} | ${row.p99} | ${row.max} | ${fixed(row.peakRssMb)} | ${row.errors} |`,
    );
  }
}
