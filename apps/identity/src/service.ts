import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  type MigrationReport,
  type OpenedDatabase,
  openDatabase,
  prepareSchema,
  readPoolStats,
} from "@agentpass/db";
import {
  addDatabaseMetrics,
  createLoopbackClient,
  createServiceMetrics,
  type Endpoint,
  type Listener,
  type LoopbackRequest,
} from "@agentpass/http";
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import type { Config } from "./config.ts";
import type { IdentityContext } from "./context.ts";
import { createAgentUseRecorder } from "./domain/agents.ts";
import { createAuditTrail } from "./domain/audit.ts";
import { type Clock, systemClock } from "./domain/clock.ts";
import { createKeyUsageRecorder } from "./domain/key-usage.ts";
import { loadSealingKeys, serviceSecret } from "./domain/sealing-keys.ts";
import { createUsageRecorder } from "./domain/usage-recorder.ts";
import { createApp } from "./http/app.ts";
import { deriveFlashKey, deriveServiceKey, keyedHash } from "./infra/crypto.ts";
import { createDpopVerifier } from "./infra/dpop-proofs.ts";
import { createLogger } from "./infra/logger.ts";
import { createMailer } from "./infra/mailer.ts";
import {
  type CounterDatabase,
  createDatabaseRateLimitStore,
  createRedisRateLimitStore,
  createSqliteRateLimitStore,
  type RateLimitStore,
} from "./infra/rate-limit.ts";
import { createAgentStore } from "./store/agent-store.ts";
import { createAuditStore } from "./store/audit-store.ts";
import { createCapabilityStore } from "./store/capability-store.ts";
import { createInstanceStore, type InstanceStore } from "./store/instance-store.ts";
import { identityMigrations } from "./store/migrations.ts";
import { createOAuthStore } from "./store/oauth-store.ts";
import { schedulePurges } from "./store/purge.ts";
import type { IdentityDatabase } from "./store/schema.ts";
import { createStore } from "./store/store.ts";
import { createUsageStore } from "./store/usage-store.ts";
import { createWebStore } from "./store/web-store.ts";

/** This release's version, as its package.json says (`agentpass_build_info`). */
const PACKAGE_VERSION: string = JSON.parse(
  readFileSync(new URL("../package.json", import.meta.url), "utf8"),
).version;

export interface IdentityService {
  /** Answers every request: the API endpoints and the pages, through the one router. */
  listener: Listener;
  /** The API endpoints, as defined once (the OpenAPI document is generated from them). */
  endpoints: Endpoint[];
  /** A request through `listener` over a loopback socket (tests and tools), like `fetch`. */
  request: LoopbackRequest;
  ctx: IdentityContext;
  /**
   * The database the service opened and closes. Only what builds the service uses it (the
   * stores, the rate-limit counters, the purges) and tests that seed or read tables directly:
   * the domain reaches the database only through the stores of `ctx`.
   */
  database: OpenedDatabase<IdentityDatabase>;
  logger: Logger;
  /** `/readyz` answers 503 `shutting_down` from now on (`startServer`'s close calls it). */
  beginDrain(): void;
  /**
   * A check value of the service's secret (`secretCheck`); the serving instances and the secret
   * each runs under (`instances`), which `sealing-keys rotate` reads.
   */
  secretCheck: string;
  instances: InstanceStore;
  /** Flushes pending key-use times, leaves `instances` and closes the database. */
  close(): Promise<void>;
}

/** How often a serving instance announces itself, and how long it counts as running after. */
const INSTANCE_ANNOUNCE_MS = 30_000;
export const INSTANCE_SEEN_MS = 3 * INSTANCE_ANNOUNCE_MS;

/** The identity database of `config`, not yet migrated. */
export function openIdentityDatabase(config: Config) {
  return openDatabase<IdentityDatabase>({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    fileName: "identity.sqlite",
    poolSize: config.databasePool.size,
    poolMode: config.databasePool.mode,
  });
}

/** Applies the migrations the database lacks: `agentpass-server migrate`, a deploy's step. */
export async function migrateIdentityDatabase(config: Config): Promise<MigrationReport> {
  const database = openIdentityDatabase(config);
  try {
    return await database.migrate("identity", identityMigrations(database.engine));
  } finally {
    await database.close();
  }
}

/**
 * Opens the database (migrating it, unless `config.migrateOnStart` is false: then a database
 * that lacks a migration is refused), loads the sealing keys and builds the app. With
 * `announce`, the instance lists itself in `instances` until it closes and purges expired rows:
 * what `serve` does.
 */
export async function openIdentityService(
  config: Config,
  options: { clock?: Clock; logger?: Logger; announce?: boolean; tracer?: Tracer } = {},
): Promise<IdentityService> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const database = openIdentityDatabase(config);
  try {
    await prepareSchema(database, "identity", identityMigrations(database.engine), {
      migrate: config.migrateOnStart,
      migrateCommand: "agentpass-server migrate",
      onUnknown: (names) =>
        logger.warn(
          { migrations: names },
          "the database has migrations this release does not know (a newer release's); running beside them",
        ),
    });
    const store = createStore(database);
    const keyUsage = createKeyUsageRecorder(store, (error) =>
      logger.warn({ err: error }, "could not record key use"),
    );
    const usageStore = createUsageStore(database);
    const usage = createUsageRecorder(usageStore, (error) =>
      logger.warn({ err: error }, "could not record usage"),
    );
    const sealingKeys = await loadSealingKeys(store, config, clock, logger);
    // Read once the keys are loaded: loading makes DATA_DIR/identity.secret on a first start.
    const secret = serviceSecret(config);
    const rateLimitStore = openRateLimitStore(config, database, clock, (error) =>
      logger.warn({ err: error }, "rate-limit store unreachable; counting in memory meanwhile"),
    );
    const agents = createAgentStore(database);
    const agentUse = createAgentUseRecorder(agents, (error) =>
      logger.warn({ err: error }, "could not record agent use"),
    );
    const ctx: IdentityContext = {
      store,
      oauth: createOAuthStore(database),
      clock,
      keyUsage,
      web: createWebStore(database),
      usageStore,
      usage,
      audit: createAuditTrail(createAuditStore(database), logger, clock),
      sealingKeys,
      sessionTokenTtlMs: config.sessionTokenTtlSeconds * 1000,
      agents,
      capabilities: createCapabilityStore(database),
      agentUse,
      agentLifetimes: {
        idleMs: config.agentLifetimes.idleSeconds * 1000,
        absoluteMs: config.agentLifetimes.absoluteSeconds * 1000,
      },
      seen: rateLimitStore,
      keys: serviceKeys(secret),
      dpop: createDpopVerifier({
        seen: rateLimitStore,
        nonceKey: deriveServiceKey(secret, "agentpass dpop nonces v1"),
        clock,
      }),
    };
    const mailer = createMailer(config.smtpUrl, config.mailFrom, logger);
    // Serving instances purge (`announce`); a one-shot admin command deletes nothing it did not
    // ask for, however long it runs (an export waits out the instances' usage writes).
    const purges = options.announce
      ? schedulePurges(
          database,
          clock,
          (error) => logger.warn({ err: error }, "could not purge expired rows"),
          config.retention,
        )
      : undefined;
    const metrics = createServiceMetrics({
      token: config.metricsToken,
      build: { service: "identity", version: PACKAGE_VERSION },
    });
    addDatabaseMetrics(metrics, {
      pool: () => readPoolStats(database),
      cacheLookups: () => ctx.store.keyCacheLookups,
    });
    let draining = false;
    const { listener, endpoints } = createApp({
      ctx,
      notReady: () => (draining ? "shutting_down" : null),
      logger,
      publicUrl: config.publicUrl,
      development: config.development,
      mailer,
      rateLimitStore,
      rateLimitSettings: config.rateLimits,
      trustProxy: config.trustProxy,
      flashKey: deriveFlashKey(secret),
      metrics,
      ...(options.tracer && { tracer: options.tracer }),
    });
    const loopback = createLoopbackClient(listener);
    const secretCheck = secretCheckOf(secret);
    const instances = createInstanceStore(database);
    const self = { id: randomUUID(), secretCheck, startedAt: clock(), seenAt: clock() };
    const announce = () =>
      instances
        .announce({ ...self, seenAt: clock() })
        .catch((error) => logger.warn({ err: error }, "could not announce this instance"));
    let announcing: NodeJS.Timeout | undefined;
    if (options.announce) {
      await announce();
      announcing = setInterval(announce, INSTANCE_ANNOUNCE_MS);
      announcing.unref();
    }
    return {
      listener,
      endpoints,
      request: loopback.request,
      ctx,
      database,
      logger,
      secretCheck,
      instances,
      beginDrain: () => {
        draining = true;
      },
      close: async () => {
        if (announcing) {
          clearInterval(announcing);
          await instances.leave(self.id).catch(() => {});
        }
        await loopback.close();
        await purges?.stop();
        await ctx.audit.flush().catch(() => {});
        await keyUsage.close().catch(() => {});
        await agentUse.close().catch(() => {});
        await usage.close().catch(() => {});
        await rateLimitStore.close();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}

/**
 * Rate-limit counters shared by every instance: in Redis when REDIS_URL is set, else in
 * PostgreSQL, each windowed by its own server's clock. An SQLite file serves one process, whose
 * memory and clock are then enough.
 */
function openRateLimitStore(
  config: Config,
  database: CounterDatabase & Pick<OpenedDatabase<IdentityDatabase>, "engine">,
  clock: Clock,
  onError: (error: Error) => void,
): RateLimitStore {
  if (config.redisUrl) return createRedisRateLimitStore(config.redisUrl, { clock, onError });
  if (database.engine === "postgres") return createDatabaseRateLimitStore(database);
  return createSqliteRateLimitStore(database, clock);
}

/**
 * A check value of the service's secret, which instances compare without revealing it: an HMAC
 * under a key derived from it (its own label). It tells no more about the secret than the
 * wrapped sealing keys beside it in the database do.
 */
function secretCheckOf(secret: string | Buffer): string {
  return keyedHash(deriveServiceKey(secret, "agentpass secret check v1"), "agentpass").slice(0, 16);
}

/** The keys the context derives from the service's secret, each under a label of its own. */
function serviceKeys(secret: string | Buffer): IdentityContext["keys"] {
  return {
    shortCodes: deriveServiceKey(secret, "agentpass short codes v1"),
    refreshTokens: deriveServiceKey(secret, "agentpass refresh tokens v1"),
  };
}
