import { readFileSync } from "node:fs";
import { type MigrationReport, openDatabase, prepareSchema, readPoolStats } from "@agentpass/db";
import {
  addDatabaseMetrics,
  createLogDestination,
  createLoopbackClient,
  createServiceMetrics,
  type Endpoint,
  type Listener,
  type LoopbackRequest,
} from "@agentpass/http";
import {
  createVerifier,
  type DeclareResult,
  MAX_CACHE_TTL_MS,
  type Verifier,
} from "@agentpass/verify";
import type { Tracer } from "@opentelemetry/api";
import { LRUCache } from "lru-cache";
import pino, { type Logger } from "pino";
import { createNotesApi } from "./app.ts";
import type { NotesConfig } from "./config.ts";
import type { NotesContext } from "./context.ts";
import { watchPartnerKey } from "./partner-key-watch.ts";
import { notesCapabilities } from "./routes/agent-execute.ts";
import { notesMigrations } from "./store/migrations.ts";
import type { NotesDatabase } from "./store/schema.ts";
import { createNotesStore } from "./store/store.ts";
import { createUnavailableLog } from "./unavailable-log.ts";

/** This release's version, as its package.json says (`agentpass_build_info`). */
const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(new URL("../package.json", import.meta.url), "utf8"),
).version;

/**
 * Successful verifications are reused this long at most (and never past the token's expiry):
 * a revoked user key stops reaching the notes within this time, outage or not.
 */
export const VERIFY_CACHE_MS = MAX_CACHE_TTL_MS;
/** The SQLite page cache of the notes database (ignored on PostgreSQL). */
export const NOTES_CACHE_MB = 64;

/**
 * Without a partner key nobody can be verified: every authenticated call answers 503, logged and
 * counted as our partner key refused (`partner_key_missing`), not as AgentPass out of reach.
 */
const WITHOUT_PARTNER_KEY: Verifier = {
  verify: async () => ({
    ok: false,
    error: "Missing partner key",
    status: 0,
    code: "partner_key_missing",
  }),
};

/** The session token of the start's readiness probe: well formed, and opens nothing. */
const READINESS_PROBE_TOKEN = "aps_readiness-probe";

export interface NotesService {
  /** Answers every request. */
  listener: Listener;
  /** The API endpoints, as defined once (the OpenAPI document is generated from them). */
  endpoints: Endpoint[];
  /** A request through `listener` over a loopback socket (tests and tools), like `fetch`. */
  request: LoopbackRequest;
  ctx: NotesContext;
  logger: Logger;
  /** `/readyz` answers 503 `shutting_down` from now on (`startServer`'s close calls it). */
  beginDrain(): void;
  /**
   * Makes the notes API's capabilities what AgentPass offers agents (done at start, with
   * retries while AgentPass is out of reach); undefined without a partner key.
   */
  declareCapabilities(): Promise<DeclareResult | undefined>;
  close(): Promise<void>;
}

/** The notes database of `config`, not yet migrated. */
export function openNotesDatabase(config: NotesConfig, options: { readerThreads: number }) {
  return openDatabase<NotesDatabase>({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    fileName: "notes.sqlite",
    // A search reads the rows of all its matches: with SQLite's default 2 MiB cache each read
    // went to the OS (a search over 2,000 matches of 100,000 notes: 14.6 → 9.8 ms with 64 MiB).
    cacheMb: NOTES_CACHE_MB,
    readerThreads: options.readerThreads,
    poolSize: config.databasePool.size,
    poolMode: config.databasePool.mode,
  });
}

/** Applies the migrations the database lacks: `agentpass-notes migrate`, a deploy's step. */
export async function migrateNotesDatabase(config: NotesConfig): Promise<MigrationReport> {
  const database = openNotesDatabase(config, { readerThreads: 0 });
  try {
    return await database.migrate("notes", notesMigrations(database.engine));
  } finally {
    await database.close();
  }
}

/**
 * Opens the notes database (migrating it, unless `config.migrateOnStart` is false: then a
 * database that lacks a migration is refused) and builds the app around an AgentPass verifier.
 */
export async function openNotesService(
  config: NotesConfig,
  options: { clock?: () => number; verifier?: Verifier; logger?: Logger; tracer?: Tracer } = {},
): Promise<NotesService> {
  const logger =
    options.logger ??
    pino({ level: config.logLevel, base: { service: "agentpass-notes" } }, createLogDestination(1));
  const database = openNotesDatabase(config, { readerThreads: config.readerThreads });
  try {
    await prepareSchema(database, "notes", notesMigrations(database.engine), {
      migrate: config.migrateOnStart,
      migrateCommand: "agentpass-notes migrate",
      onUnknown: (names) =>
        logger.warn(
          { migrations: names },
          "the database has migrations this release does not know (a newer release's); running beside them",
        ),
    });
    if (!config.partnerKey && !options.verifier) {
      logger.warn("AGENTPASS_PARTNER_KEY is not set: every authenticated call will answer 503");
    }
    const clock = options.clock ?? Date.now;
    // Readiness fails while AgentPass refuses our partner key: every authenticated call would.
    const watched = options.verifier
      ? watchPartnerKey(options.verifier)
      : config.partnerKey
        ? watchPartnerKey(
            createVerifier({
              partnerKey: config.partnerKey,
              apiUrl: config.agentpassUrl,
              timeoutMs: config.agentpassTimeoutMs,
              cacheTtlMs: VERIFY_CACHE_MS,
              now: clock,
              onError: (fault) => logger.error({ code: fault.code }, fault.message),
            }),
          )
        : watchPartnerKey(WITHOUT_PARTNER_KEY, "partner_key_missing");
    // What AgentPass says of our partner key at start, before any call asks: a deploy with a
    // wrong or revoked key is not ready from its first /readyz. A token that opens nothing asks
    // about the key alone (it counts as one failed verification on the partner's usage).
    const startProbe =
      config.partnerKey && !options.verifier
        ? watched.verifier.verify(READINESS_PROBE_TOKEN).then(
            () => undefined,
            () => undefined,
          )
        : Promise.resolve();
    let draining = false;
    const ctx: NotesContext = {
      store: createNotesStore(database, config.limits),
      clock,
      canonicalEmails: new LRUCache({ max: 10_000 }),
      reportUnavailable: createUnavailableLog(logger, Date.now),
      verifier: watched.verifier,
    };
    const metrics = createServiceMetrics({
      token: config.metricsToken,
      build: { service: "notes", version: PACKAGE_VERSION },
    });
    addDatabaseMetrics(metrics, {
      pool: () => readPoolStats(database),
      cacheLookups: () => ctx.store.userCacheLookups,
    });
    const { listener, endpoints } = createNotesApi(ctx, {
      logger,
      publicUrl: config.publicUrl,
      // Named to clients as the issuer: the URL they reach AgentPass at, not ours inside.
      agentpassUrl: config.agentpassPublicUrl,
      metrics,
      ...(options.tracer && { tracer: options.tracer }),
      notReady: async () => {
        await startProbe;
        return draining ? "shutting_down" : watched.partnerKeyRefused();
      },
    });
    const loopback = createLoopbackClient(listener);
    const capabilities = notesCapabilities(config.publicUrl);
    const declareCapabilities = async (): Promise<DeclareResult | undefined> =>
      watched.verifier.declareCapabilities?.(capabilities);
    // Declared at start, again after a failure AgentPass may get over (unreachable): a refusal
    // (a location at no resource URL of ours) waits for an operator, and a restart.
    const declaring =
      config.partnerKey && !options.verifier ? retrying(declareCapabilities, logger) : null;
    return {
      listener,
      endpoints,
      request: loopback.request,
      ctx,
      logger,
      beginDrain: () => {
        draining = true;
      },
      declareCapabilities,
      close: async () => {
        declaring?.stop();
        await startProbe;
        await loopback.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/** Declares the capabilities until AgentPass answers, backing off from 1 s to a minute. */
function retrying(declare: () => Promise<DeclareResult | undefined>, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = async (waitMs: number): Promise<void> => {
    const result = await declare();
    if (stopped || !result || result.ok) return;
    if (result.status !== 503) {
      logger.error({ code: result.error }, `capabilities not declared: ${result.message}`);
      return;
    }
    timer = setTimeout(() => void attempt(Math.min(waitMs * 2, 60_000)), waitMs);
    timer.unref();
  };
  void attempt(1000);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
