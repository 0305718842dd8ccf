import {
  type DatabaseSettings,
  DEFAULT_DATA_DIR,
  databaseSettings,
  ensureDataDir,
  toDatabaseSettings,
} from "@agentpass/db";
import {
  DEFAULT_DRAIN_MS,
  isLocalDevelopment,
  isLoopbackUrl,
  LOOPBACK_HOSTS,
  parseTrustProxy,
  readEnvironment,
  type TrustProxy,
  trustingHeader,
  urlSetting,
} from "@agentpass/http";
import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);
const perMinute = z.coerce.number().int().min(1).max(1_000_000_000);
/** A retention in days: at least one, at most a hundred years. */
const retentionDays = (fallback: number) =>
  z.coerce.number().int().min(1).max(36_500).default(fallback);

/** How long each kind of row is kept, in days (`store/purge.ts`, docs/operations.md). */
export interface Retention {
  auditDays: number;
  usageDays: number;
  activityDays: number;
  revokedKeyDays: number;
  sealingKeyDays: number;
}

/** The retention when no *_RETENTION_DAYS is set. */
export const DEFAULT_RETENTION: Retention = {
  auditDays: 400,
  usageDays: 400,
  activityDays: 400,
  revokedKeyDays: 400,
  sealingKeyDays: 30,
};

/** Every setting of the identity service; nothing else reads the environment. */
const ConfigSchema = z.object({
  PORT: port.default(4000),
  /**
   * Interface to listen on. Unset: the loopback addresses only while PUBLIC_URL is unset or http
   * on a loopback host (development), so nobody else reaches it; every interface (IPv4 and IPv6)
   * otherwise. Any address but a loopback one (0.0.0.0, ::, a LAN address) is production.
   */
  HOST: z.string().min(1).optional(),
  /**
   * Proxies trusted to say who the client is (X-Forwarded-For / Forwarded): a hop count, or
   * comma-separated addresses and CIDR ranges. Unset: none; the client is the socket's peer.
   */
  TRUST_PROXY: z
    .string()
    .transform((value, context) => {
      const trust = parseTrustProxy(value);
      if (typeof trust === "object" && "error" in trust) {
        context.addIssue({ code: "custom", message: trust.error });
        return z.NEVER;
      }
      return trust;
    })
    .optional(),
  /**
   * The one header the trusted proxies write to name the client: `x-forwarded-for` (unset) or
   * `forwarded` (RFC 7239). The other is ignored: a client could write it.
   */
  TRUST_PROXY_HEADER: z.enum(["x-forwarded-for", "forwarded"]).optional(),
  /**
   * Milliseconds a stopping server keeps serving after /readyz turned 503, so the load balancer
   * takes it out first. Unset: 5000, or 0 in development (`Config.development`).
   */
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(120_000).optional(),
  /** Who runs the admin commands, for the audit log (`--operator` wins); unset: the system user. */
  AGENTPASS_OPERATOR: z.string().trim().min(1).max(100).optional(),
  /** Open connections past which new ones are dropped; unset: no cap. */
  MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).optional(),
  /** `/metrics` answers `Authorization: Bearer <this>` from anywhere; unset: loopback clients only. */
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  DATABASE_URL: urlSetting(
    ["postgres", "postgresql"],
    "must be a postgres:// URL (leave it unset for SQLite)",
  ).optional(),
  ...databaseSettings,
  /** At most the spec's 5 minutes; shorter only for tests of expiry. */
  SESSION_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(300, "must be at most 300 (a session token lives 5 minutes)")
    .default(300),
  /** An agent unused this many seconds expires (reactivated by its host); default 7 days. */
  AGENT_IDLE_TTL: z.coerce.number().int().min(60).max(31_536_000).default(604_800),
  /** An agent is revoked this many seconds after it was registered; default 90 days. */
  AGENT_ABSOLUTE_LIFETIME: z.coerce.number().int().min(60).max(157_680_000).default(7_776_000),
  /** Days audit events are kept (`agentpass-server audit`, the account's security page). */
  AUDIT_RETENTION_DAYS: retentionDays(DEFAULT_RETENTION.auditDays),
  /** Days a partner's daily verify counts are kept. */
  USAGE_RETENTION_DAYS: retentionDays(DEFAULT_RETENTION.usageDays),
  /** Days after a partner last verified a person's token that the person's record of it is kept. */
  ACTIVITY_RETENTION_DAYS: retentionDays(DEFAULT_RETENTION.activityDays),
  /** Days a revoked key is kept (a revoked partner key answers 403 until then, then 401). */
  REVOKED_KEY_RETENTION_DAYS: retentionDays(DEFAULT_RETENTION.revokedKeyDays),
  /** Days a sealing key is kept once a newer one replaced it (it opens nothing after 5 minutes). */
  SEALING_KEY_RETENTION_DAYS: retentionDays(DEFAULT_RETENTION.sealingKeyDays),
  /** Where clients reach the service; an https one is production. */
  PUBLIC_URL: urlSetting(["http", "https"], "must be an http:// or https:// URL").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** smtp(s)://user:pass@host:port for sign-in mail; unset: mail is written to the log. */
  SMTP_URL: urlSetting(["smtp", "smtps"], "must be an smtp:// or smtps:// URL").optional(),
  MAIL_FROM: z.string().min(3).default("AgentPass <no-reply@agentpass.local>"),
  /** redis:// URL: rate-limit counters go there instead of the database. */
  REDIS_URL: urlSetting(["redis", "rediss"], "must be a redis:// or rediss:// URL").optional(),
  /** Session tokens one user key may mint per minute. */
  MINTS_PER_MINUTE: perMinute.default(60),
  /** Failed verifications (bad session tokens) one partner key may ask per minute. */
  FAILED_VERIFIES_PER_MINUTE: perMinute.default(6000),
  /** Requests with an unknown or revoked key one client address may send per minute. */
  BAD_KEYS_PER_MINUTE: perMinute.default(60),
  /** Revocations (RFC 7009) one client address may ask per minute. */
  REVOCATIONS_PER_MINUTE: perMinute.default(60),
  /** Clients one client address may register (RFC 7591) per hour. */
  CLIENT_REGISTRATIONS_PER_HOUR: perMinute.default(60),
  /** Client metadata documents fetched per minute for one client address (cached ones are free). */
  CLIENT_DOCUMENT_FETCHES_PER_MINUTE: perMinute.default(20),
  /** Client metadata documents fetched per minute from one host name. */
  CLIENT_DOCUMENT_FETCHES_PER_HOST_PER_MINUTE: perMinute.default(60),
  /** Client metadata documents one instance fetches at once; past it, a request is refused. */
  CLIENT_DOCUMENT_FETCHES_AT_ONCE: z.coerce.number().int().min(1).max(1000).default(16),
  /**
   * Sealing keys for session tokens as `id:base64secret` pairs, comma-separated, the first one
   * sealing new tokens. Unset: keys are generated on first start and kept in the database,
   * wrapped under AGENTPASS_SECRET.
   */
  TOKEN_KEYS: z
    .string()
    .regex(
      /^[0-9a-f]{8}:[A-Za-z0-9+/_-]{43}=?(,[0-9a-f]{8}:[A-Za-z0-9+/_-]{43}=?)*$/,
      "must be comma-separated id:key pairs (8 hex characters, a colon, 32 bytes in base64)",
    )
    .transform((pairs) => pairs.split(",").map(toTokenKey))
    .superRefine((keys, context) => {
      const twice = keys.find((key, index) => keys.findIndex((k) => k.id === key.id) !== index);
      // Two keys under one id: a token would open under whichever came first, or not at all.
      if (twice) context.addIssue({ code: "custom", message: `key id ${twice.id} appears twice` });
    })
    .optional(),
  /**
   * The secret the sealing keys in the database are wrapped under (the key-encryption key is
   * derived from it). Unset: kept in DATA_DIR/identity.secret, made on the first start.
   * Several instances on one database need the same one.
   */
  AGENTPASS_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
});

/** A secret that sealing keys may be wrapped under: AGENTPASS_SECRET, or one given to `rewrap`. */
export const SecretSchema = ConfigSchema.shape.AGENTPASS_SECRET.unwrap();

function toTokenKey(pair: string): TokenKey {
  const [id = "", secret = ""] = pair.split(":");
  return { id, secret: Buffer.from(secret, "base64") };
}

/** A sealing key given in TOKEN_KEYS. */
interface TokenKey {
  /** 8 hex characters. */
  id: string;
  /** 32 bytes. */
  secret: Buffer;
}

export interface Config extends DatabaseSettings {
  port: number;
  /** Where to listen (`ServerOptions.host`); unset: every interface. */
  host: string | readonly string[] | undefined;
  /**
   * Development on loopback (`isLocalDevelopment`): listening on loopback only, with a loopback
   * http PUBLIC_URL. Only then are sign-in codes written to the log (no SMTP_URL) and client
   * documents fetched from loopback and private addresses.
   */
  development: boolean;
  trustProxy: TrustProxy;
  maxConnections: number | undefined;
  /** SHUTDOWN_DRAIN_MS, or its default (`ServerOptions.drainMs`). */
  shutdownDrainMs: number;
  /** METRICS_TOKEN; unset: `/metrics` answers loopback clients only. */
  metricsToken: string | undefined;
  /** AGENTPASS_OPERATOR: the admin commands' operator when `--operator` is not given. */
  operator: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  sessionTokenTtlSeconds: number;
  /** AGENT_IDLE_TTL and AGENT_ABSOLUTE_LIFETIME, in seconds. */
  agentLifetimes: { idleSeconds: number; absoluteSeconds: number };
  /** The *_RETENTION_DAYS settings: how long each kind of row is kept (`store/purge.ts`). */
  retention: Retention;
  publicUrl: string;
  logLevel: z.infer<typeof ConfigSchema>["LOG_LEVEL"];
  /** From TOKEN_KEYS, the first one sealing; unset: the keys are kept in the database. */
  tokenKeys: TokenKey[] | undefined;
  /** AGENTPASS_SECRET; unset: DATA_DIR/identity.secret holds it. */
  secret: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  redisUrl: string | undefined;
  rateLimits: RateLimitSettings;
}

/** Per-minute budgets of the hot paths (the slow paths' limits are fixed, in limits.ts). */
export interface RateLimitSettings {
  mintsPerMinute: number;
  failedVerifiesPerMinute: number;
  badKeysPerMinute: number;
  revocationsPerMinute: number;
  clientRegistrationsPerHour: number;
  clientDocumentFetchesPerMinute: number;
  clientDocumentFetchesPerHostPerMinute: number;
  /** Not a window: how many client metadata documents one instance fetches at once. */
  clientDocumentFetchesAtOnce: number;
}

/** The settings that may be given as `<NAME>_FILE`: secrets, and URLs that may carry a password. */
const SECRET_VARIABLES = [
  "AGENTPASS_SECRET",
  "TOKEN_KEYS",
  "DATABASE_URL",
  "REDIS_URL",
  "SMTP_URL",
  "METRICS_TOKEN",
];

/** Why a service others reach does not start without SMTP, naming the setting that makes it so. */
function smtpRequired(publicUrl: string, host: string | readonly string[] | undefined): string {
  const why = isLoopbackUrl(publicUrl)
    ? `HOST=${[host ?? ""].flat().join(",")} answers other machines`
    : "PUBLIC_URL is not http on a loopback host";
  return `Invalid SMTP_URL: required unless in development (listening on loopback only, PUBLIC_URL http on a loopback host): ${why}`;
}

type ConfigResult =
  | {
      ok: true;
      config: Config;
      /** For the operator, at start: unknown variables that look like a misspelt setting. */
      warnings: string[];
    }
  | { ok: false; error: string };

/**
 * Reads the configuration from `env`, and makes DATA_DIR when the service will keep files there.
 * A bad value, an unusable DATA_DIR, or (in production: an https PUBLIC_URL) an unknown variable
 * that looks like a misspelt setting stops the start with a message naming the variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): ConfigResult {
  const read = readEnvironment(ConfigSchema, env, SECRET_VARIABLES);
  if (!read.ok) return read;
  const { values, warnings } = read;
  const publicUrl = (values.PUBLIC_URL ?? `http://localhost:${values.PORT}`).replace(/\/$/, "");
  const host = values.HOST ?? (isLoopbackUrl(publicUrl) ? LOOPBACK_HOSTS : undefined);
  const development = isLocalDevelopment(publicUrl, host);
  if (!values.SMTP_URL && !development) {
    // Without SMTP, sign-in codes and links go to the log: fine on a laptop, never where others
    // reach the service (a container on 0.0.0.0 included) and someone else reads its log.
    return { ok: false, error: smtpRequired(publicUrl, host) };
  }
  // DATA_DIR holds the SQLite file, and DATA_DIR/identity.secret unless a setting replaces it.
  if (!values.DATABASE_URL || !(values.AGENTPASS_SECRET || values.TOKEN_KEYS)) {
    const dataDir = ensureDataDir(values.DATA_DIR);
    if (!dataDir.ok) return dataDir;
  }
  return {
    ok: true,
    warnings,
    config: {
      port: values.PORT,
      host,
      development,
      trustProxy: trustingHeader(values.TRUST_PROXY ?? "none", values.TRUST_PROXY_HEADER),
      maxConnections: values.MAX_CONNECTIONS,
      shutdownDrainMs: values.SHUTDOWN_DRAIN_MS ?? (development ? 0 : DEFAULT_DRAIN_MS),
      metricsToken: values.METRICS_TOKEN,
      operator: values.AGENTPASS_OPERATOR,
      dataDir: values.DATA_DIR,
      databaseUrl: values.DATABASE_URL,
      ...toDatabaseSettings(values),
      sessionTokenTtlSeconds: values.SESSION_TOKEN_TTL_SECONDS,
      agentLifetimes: {
        idleSeconds: values.AGENT_IDLE_TTL,
        absoluteSeconds: values.AGENT_ABSOLUTE_LIFETIME,
      },
      retention: {
        auditDays: values.AUDIT_RETENTION_DAYS,
        usageDays: values.USAGE_RETENTION_DAYS,
        activityDays: values.ACTIVITY_RETENTION_DAYS,
        revokedKeyDays: values.REVOKED_KEY_RETENTION_DAYS,
        sealingKeyDays: values.SEALING_KEY_RETENTION_DAYS,
      },
      publicUrl,
      logLevel: values.LOG_LEVEL,
      tokenKeys: values.TOKEN_KEYS,
      secret: values.AGENTPASS_SECRET,
      smtpUrl: values.SMTP_URL,
      mailFrom: values.MAIL_FROM,
      redisUrl: values.REDIS_URL,
      rateLimits: {
        mintsPerMinute: values.MINTS_PER_MINUTE,
        failedVerifiesPerMinute: values.FAILED_VERIFIES_PER_MINUTE,
        badKeysPerMinute: values.BAD_KEYS_PER_MINUTE,
        revocationsPerMinute: values.REVOCATIONS_PER_MINUTE,
        clientRegistrationsPerHour: values.CLIENT_REGISTRATIONS_PER_HOUR,
        clientDocumentFetchesPerMinute: values.CLIENT_DOCUMENT_FETCHES_PER_MINUTE,
        clientDocumentFetchesPerHostPerMinute: values.CLIENT_DOCUMENT_FETCHES_PER_HOST_PER_MINUTE,
        clientDocumentFetchesAtOnce: values.CLIENT_DOCUMENT_FETCHES_AT_ONCE,
      },
    },
  };
}
