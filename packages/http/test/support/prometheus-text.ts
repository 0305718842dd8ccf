/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
// NaN in any letter case, as Prometheus reads it (Go's ParseFloat): prom-client writes `Nan` for
// the event loop delay's statistics before the first sample.
const VALUE = "[-+]?(?:[0-9]*\\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf)|[Nn][Aa][Nn]";
const SAMPLE = new RegExp(
  `^(${NAME})(?:\\{((?:${LABEL})(?:,${LABEL})*,?)?\\})? (${VALUE})(?: -?[0-9]+)?$`,
);
const HELP = new RegExp(`^# HELP (${NAME}) .*$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SUFFIXES = ["_bucket", "_sum", "_count", "_total", "_created"];

/**
 * Parses the Prometheus text format (version 0.0.4) strictly, line by line: every line is a
 * HELP, a TYPE, a sample of a family whose TYPE came before it, or empty. Throws on the first
 * line that is none of these, naming it.
 */
export function parsePrometheusText(text: string): Sample[] {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  for (const [index, line] of lines.entries()) {
    const where = `line ${index + 1}: ${JSON.stringify(line)}`;
    if (line === "") continue;
    const type = TYPE.exec(line);
    if (type) {
      if (types.has(type[1] as string)) throw new Error(`a second TYPE, ${where}`);
      types.set(type[1] as string, type[2] as string);
      continue;
    }
    if (HELP.test(line)) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a sample, ${where}`);
    const name = sample[1] as string;
    const family = [
      name,
      ...SUFFIXES.map((s) => (name.endsWith(s) ? name.slice(0, -s.length) : "")),
    ];
    if (!family.some((candidate) => candidate !== "" && types.has(candidate))) {
      throw new Error(`a sample with no TYPE before it, ${where}`);
    }
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (sample[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key as string] = (raw as string).replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    const raw = sample[3] as string;
    samples.push({
      name,
      labels,
      value: raw.endsWith("Inf") ? (raw.startsWith("-") ? -Infinity : Infinity) : Number(raw),
    });
  }
  return samples;
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when there is none. */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const matching = samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} match`);
  return matching[0]?.value ?? 0;
}
