import autocannon from "autocannon";
import { rssMegabytes } from "./servers.ts";

export interface Scenario {
  name: string;
  /** The server whose RSS is sampled. */
  pid: number;
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  /** The status every answer must have; anything else counts as an error. */
  expect: number;
  /** The ceiling row this scenario is compared with; the first ceiling when absent. */
  ceiling?: string;
  /** Connections for this scenario, when not the run's (a latency measured without a queue). */
  connections?: number;
  /**
   * For a scenario whose every request must differ (a DPoP proof is accepted once): makes
   * `count` bodies, each sent once, before the scenario is timed. `pacedBy` is a scenario that
   * does less, run before this one in the round: its rate sizes `count`.
   */
  oneUseBodies?: { make(count: number): Promise<string[]>; pacedBy: string };
}

export interface Measurement {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  max: number;
  peakRssMb: number;
  requests: number;
  errors: number;
}

/** One probe request: does the scenario answer what it should, and how large is the answer? */
export async function probe(scenario: Scenario): Promise<{ status: number; bytes: number }> {
  const [oneUse] = (await scenario.oneUseBodies?.make(1)) ?? [];
  const response = await fetch(scenario.url, {
    method: scenario.method,
    headers: scenario.headers,
    body: oneUse ?? scenario.body,
  });
  return { status: response.status, bytes: (await response.arrayBuffer()).byteLength };
}

/**
 * Loads a scenario for `duration` seconds over `connections`, sampling the server's RSS. With
 * `bodies` (its one-use bodies, made beforehand), each request sends the next; once they run
 * out, requests go without a body and count as errors.
 */
export async function measure(
  scenario: Scenario,
  options: { duration: number; connections: number; bodies?: string[] },
): Promise<Measurement> {
  let peakRssMb = rssMegabytes(scenario.pid);
  const sampler = setInterval(() => {
    peakRssMb = Math.max(peakRssMb, rssMegabytes(scenario.pid));
  }, 100);
  const { bodies } = options;
  let sent = 0;
  try {
    const result = await autocannon({
      url: scenario.url,
      method: scenario.method,
      headers: scenario.headers,
      body: scenario.body,
      connections: scenario.connections ?? options.connections,
      duration: options.duration,
      ...(bodies && {
        requests: [{ setupRequest: (request) => ({ ...request, body: bodies[sent++] ?? "" }) }],
      }),
    });
    if (bodies && sent > bodies.length) {
      console.error(`bench: ${scenario.name} ran out of its ${bodies.length} one-use bodies`);
    }
    const stats =
      (result as unknown as { statusCodeStats?: Record<string, { count: number }> })
        .statusCodeStats ?? {};
    const expected = stats[String(scenario.expect)]?.count ?? 0;
    const requests = result.requests.total;
    return {
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      peakRssMb,
      requests,
      errors: requests - expected + result.errors + result.timeouts,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** The median of `values` (the mean of the middle two for an even count). */
export function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[half] as number)
    : ((sorted[half - 1] as number) + (sorted[half] as number)) / 2;
}

/** The median of each figure over rounds, so one noisy round cannot decide. */
export function median(rounds: Measurement[]): Measurement {
  const mid = (pick: (m: Measurement) => number) => medianOf(rounds.map(pick));
  return {
    requestsPerSecond: mid((m) => m.requestsPerSecond),
    p50: mid((m) => m.p50),
    p99: mid((m) => m.p99),
    max: Math.max(...rounds.map((m) => m.max)),
    peakRssMb: Math.max(...rounds.map((m) => m.peakRssMb)),
    requests: rounds.reduce((sum, m) => sum + m.requests, 0),
    errors: rounds.reduce((sum, m) => sum + m.errors, 0),
  };
}

/**
 * The p50, p99 and max of latencies in ms, to 0.1 ms, for a bound measured without autocannon
 * (search-bound.ts), whose own latencies are well under a millisecond's rounding.
 */
export function latencySummary(latenciesMs: number[]): Pick<Measurement, "p50" | "p99" | "max"> {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const at = (share: number) =>
    Math.round((sorted[Math.max(0, Math.ceil(share * sorted.length) - 1)] ?? Number.NaN) * 10) / 10;
  return { p50: at(0.5), p99: at(0.99), max: at(1) };
}
