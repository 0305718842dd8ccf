import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { isLoopbackRequest, type TrustProxy } from "./client-address.ts";

/** Where a service answers its metrics, in Prometheus's text format. */
export const METRICS_PATH = "/metrics";

/** Request durations, in seconds: verify and mint answer in a millisecond or two, searches in up to 2 s. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** What a label may hold as it is; anything else is counted as `other`, so series stay few. */
const CODE = /^[a-z0-9_]{1,64}$/;

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The series of one method of one route. */
interface RouteSeries {
  timer: Histogram.Internal<"method" | "route">;
  byStatus: Map<number, Counter.Internal>;
}

/** The metrics of one service instance, and who may read them. */
export interface ServiceMetrics {
  /**
   * The instance's own registry, which `/metrics` answers: a service adds its own series to it.
   * Never prom-client's global one: tests run several services in one process.
   */
  readonly registry: Registry;
  /** `METRICS_TOKEN`: when set, `/metrics` answers only `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
  /** Counts and times one answer (the router's `respond`: every answer, once). */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Counts one 503 by its code (`unavailable`: the database could not answer). */
  countUnavailable(code: string): void;
  /** Counts an answer of an endpoint that names its `outcome`, by the answer's code. */
  countOutcome(operation: string, code: string): void;
}

/**
 * The series every service has, in a registry of its own: the process and Node runtime ones
 * prom-client collects by default (memory, CPU, event loop lag, GC); requests by method, route
 * template and status code, with a histogram of their durations; 503s by code; the outcomes of the
 * endpoints that name one (verify, mint). Labels hold route templates and codes from the
 * services' error tables only, never a path or a value a client chose.
 */
export function createServiceMetrics(
  options: {
    token?: string | undefined;
    /** What runs: `agentpass_build_info{service, version, node_version}` is 1 for it. */
    build?: { service: string; version: string };
  } = {},
): ServiceMetrics {
  const registry = new Registry();
  if (options.build) {
    new Gauge({
      name: "agentpass_build_info",
      help: "1, labelled with the service, its version and the Node version running it",
      labelNames: ["service", "version", "node_version"],
      registers: [registry],
    }).set({ ...options.build, node_version: process.versions.node }, 1);
  }
  // The standard process and Node runtime series (process_resident_memory_bytes,
  // nodejs_eventloop_lag_seconds, nodejs_gc_duration_seconds, …) under their usual names, so
  // the dashboards and alerts written for any Node service work here.
  collectDefaultMetrics({ register: registry });
  // The status is `code`, as promhttp (and Prometheus's own naming examples) name it, so the
  // queries written for other services work here. `status`, its former name, carries the same
  // value for one release: alerts written against it keep working until they move to `code`.
  const requests = new Counter({
    name: "agentpass_http_requests_total",
    help: "Answered requests, by method, route template and status code (code; status is its deprecated former name)",
    labelNames: ["method", "route", "code", "status"],
    registers: [registry],
  });
  const durations = new Histogram({
    name: "agentpass_http_request_duration_seconds",
    help: "Time from a request's arrival to its answer, by method and route template",
    labelNames: ["method", "route"],
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const unavailable = new Counter({
    name: "agentpass_http_unavailable_total",
    help: "Answers 503, by code: unavailable (the database could not answer), search_timeout, identity_unavailable",
    labelNames: ["code"],
    registers: [registry],
  });
  const outcomes = new Counter({
    name: "agentpass_outcomes_total",
    help: "Answers of the verify and mint endpoints, by operation and answer code (ok: a success)",
    labelNames: ["operation", "code"],
    registers: [registry],
  });
  // A request's series, found by route, then method, then status: prom-client hashes a series'
  // labels on every call, and a key built per request would cost as much.
  const series = new Map<string, Map<string, RouteSeries>>();
  const seriesOf = (method: string, route: string): RouteSeries => {
    let byMethod = series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      series.set(route, byMethod);
    }
    let found = byMethod.get(method);
    if (!found) {
      found = { timer: durations.labels(method, route), byStatus: new Map() };
      byMethod.set(method, found);
    }
    return found;
  };
  return {
    registry,
    token: options.token,
    observeRequest(method, route, status, seconds) {
      const named = METHODS.has(method) ? method : "other";
      const known = seriesOf(named, route);
      known.timer.observe(seconds);
      let counter = known.byStatus.get(status);
      if (!counter) {
        const code = String(status);
        counter = requests.labels(named, route, code, code);
        known.byStatus.set(status, counter);
      }
      counter.inc();
    },
    countUnavailable(code) {
      unavailable.inc({ code: CODE.test(code) ? code : "other" });
    },
    countOutcome(operation, code) {
      outcomes.inc({ operation, code: CODE.test(code) ? code : "other" });
    },
  };
}

/** What a scrape reads of a service's database (`readPoolStats`, `CacheLookups` of `@agentpass/db`). */
export interface DatabaseSources {
  /** The requests' pool, now; null on SQLite (no series then). */
  pool(): { total: number; idle: number; waiting: number } | null;
  /** Hits and misses of the service's key caches since it started; unset: no series. */
  cacheLookups?: () => { hits: number; misses: number };
}

/**
 * Adds the series of a service's database to its registry, read at each scrape so no request
 * pays for them: on PostgreSQL the pool's open, idle and waiting counts; the key caches' hits
 * and misses.
 */
export function addDatabaseMetrics(metrics: ServiceMetrics, sources: DatabaseSources): void {
  const registers = [metrics.registry];
  if (sources.pool() !== null) {
    const gauge = (name: string, help: string, read: (pool: PoolCounts) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const pool = sources.pool();
          if (pool) this.set(read(pool));
        },
      });
    gauge("agentpass_database_pool_connections", "PostgreSQL connections open", (p) => p.total);
    gauge("agentpass_database_pool_idle_connections", "PostgreSQL connections idle", (p) => p.idle);
    gauge(
      "agentpass_database_pool_waiting_queries",
      "Queries waiting for a PostgreSQL connection",
      (p) => p.waiting,
    );
  }
  const { cacheLookups } = sources;
  if (cacheLookups) {
    new Counter({
      name: "agentpass_cache_lookups_total",
      help: "Reads of the key caches, by result: hit (served from memory) or miss (read from the database)",
      labelNames: ["result"],
      registers,
      collect() {
        const { hits, misses } = cacheLookups();
        this.reset();
        this.inc({ result: "hit" }, hits);
        this.inc({ result: "miss" }, misses);
      },
    });
  }
}

type PoolCounts = NonNullable<ReturnType<DatabaseSources["pool"]>>;

/**
 * Whether a request may read the metrics. With a token configured: only with
 * `Authorization: Bearer <token>`, from anywhere. Without: only from this machine, as the router
 * sees the client (`isLoopbackRequest`: through a trusted proxy, the client it names). Anyone
 * else is answered as if nothing were there.
 */
export function mayReadMetrics(
  incoming: IncomingMessage,
  trust: TrustProxy,
  token: string | undefined,
): boolean {
  if (token === undefined) return isLoopbackRequest(trust, incoming);
  const authorization = incoming.headers.authorization;
  if (typeof authorization !== "string" || !authorization.startsWith("Bearer ")) return false;
  // Digests of equal length, compared in constant time: no timing tells how much of it matched.
  return timingSafeEqual(digest(authorization.slice(7)), digest(token));
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** The answer's code as a metric label: `ok` for a success, else its `code` (OAuth: `error`). */
export function outcomeCode(status: number, body: unknown): string {
  if (status < 400) return "ok";
  const fields = body as { code?: unknown; error?: unknown } | undefined;
  if (typeof fields?.code === "string") return fields.code;
  if (typeof fields?.error === "string") return fields.error;
  return `http_${status}`;
}
