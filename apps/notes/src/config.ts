import { availableParallelism } from "node:os";
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
  readEnvironment,
  urlSetting,
} from "@agentpass/http";
import { z } from "zod";
import { DEFAULT_NOTES_LIMITS, type NotesLimits } from "./store/limits.ts";

/** Every setting of the notes API; nothing else reads the environment. */
const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4001),
  /**
   * Interface to listen on. Unset: the loopback addresses while PUBLIC_URL is unset or http on a
   * loopback host (development); every interface otherwise. Any other address is production.
   */
  HOST: z.string().min(1).optional(),
  /**
   * Milliseconds a stopping server keeps serving after /readyz turned 503, so the load balancer
   * takes it out first. Unset: 5000, or 0 in development (`NotesConfig.development`).
   */
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(120_000).optional(),
  DATA_DIR: z.string().min(1).default(DEFAULT_DATA_DIR),
  DATABASE_URL: urlSetting(
    ["postgres", "postgresql"],
    "must be a postgres:// URL (leave it unset for SQLite)",
  ).optional(),
  ...databaseSettings,
  AGENTPASS_URL: urlSetting(["http", "https"], "must be an http:// or https:// URL").default(
    "http://localhost:4000",
  ),
  /**
   * AgentPass's issuer, the URL people and clients reach it at: named as the authorization server
   * in this API's protected-resource metadata. Unset: AGENTPASS_URL, which the API calls and
   * which may be an internal address (`http://lb:8080`).
   */
  AGENTPASS_PUBLIC_URL: urlSetting(
    ["http", "https"],
    "must be an http:// or https:// URL",
  ).optional(),
  AGENTPASS_PARTNER_KEY: z.string().min(1).optional(),
  /** How long a verification may take before the call is answered 503. */
  AGENTPASS_TIMEOUT_MS: z.coerce.number().int().min(100).max(30_000).default(2000),
  /**
   * SQLite only: how many threads run searches and tag-filtered lists, each with its own
   * read-only connection, so a long read never holds up the requests behind it. 0 runs them on
   * the service's own thread.
   */
  READER_THREADS: z.coerce
    .number()
    .int()
    .min(0)
    .max(64)
    .default(Math.min(4, availableParallelism())),
  /**
   * How long one search statement may run before the search is answered 503 `Search took too
   * long` (store/search-reader.ts). At most the 2 s every PostgreSQL statement has
   * (`DEFAULT_DEADLINE_MS` of `@agentpass/db`), which would answer it 503 `Service unavailable`.
   */
  SEARCH_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(10)
    .max(2000)
    .default(DEFAULT_NOTES_LIMITS.searchTimeoutMs),
  /** Notes a user may keep; a create past it is refused 409. */
  MAX_NOTES_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .default(DEFAULT_NOTES_LIMITS.maxNotesPerUser),
  /**
   * UTF-8 bytes of title, contentText and content (as stored) a user may keep across their
   * notes; a create, or an update that grows a note, past it is refused 409.
   */
  MAX_TEXT_BYTES_PER_USER: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .default(DEFAULT_NOTES_LIMITS.maxTextBytesPerUser),
  /** Where clients reach the API; an https one is production. */
  PUBLIC_URL: urlSetting(["http", "https"], "must be an http:// or https:// URL").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** `/metrics` answers `Authorization: Bearer <this>` from anywhere; unset: loopback clients only. */
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
});

export interface NotesConfig extends DatabaseSettings {
  port: number;
  /** Where to listen (`ServerOptions.host`); unset: every interface. */
  host: string | readonly string[] | undefined;
  /** Development on loopback (`isLocalDevelopment`): listening on loopback only, PUBLIC_URL too. */
  development: boolean;
  /** SHUTDOWN_DRAIN_MS, or its default (`ServerOptions.drainMs`). */
  shutdownDrainMs: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /** Where the API calls AgentPass (AGENTPASS_URL). */
  agentpassUrl: string;
  /** AgentPass's issuer, named as the authorization server (AGENTPASS_PUBLIC_URL). */
  agentpassPublicUrl: string;
  partnerKey: string | undefined;
  agentpassTimeoutMs: number;
  readerThreads: number;
  limits: NotesLimits;
  publicUrl: string;
  logLevel: z.infer<typeof ConfigSchema>["LOG_LEVEL"];
  /** METRICS_TOKEN; unset: `/metrics` answers loopback clients only. */
  metricsToken: string | undefined;
}

/** The settings that may be given as `<NAME>_FILE`: secrets, and a URL that may carry a password. */
const SECRET_VARIABLES = ["AGENTPASS_PARTNER_KEY", "DATABASE_URL", "METRICS_TOKEN"];

type NotesConfigResult =
  | {
      ok: true;
      config: NotesConfig;
      /** For the operator, at start: unknown variables that look like a misspelt setting. */
      warnings: string[];
    }
  | { ok: false; error: string };

/**
 * Reads the configuration from `env`, and makes DATA_DIR when the SQLite file is kept there. A
 * bad value, an unusable DATA_DIR, or (in production: an https PUBLIC_URL) an unknown variable
 * that looks like a misspelt setting stops the start with a message naming the variable.
 */
export function loadNotesConfig(
  env: Record<string, string | undefined> = process.env,
): NotesConfigResult {
  const read = readEnvironment(ConfigSchema, env, SECRET_VARIABLES);
  if (!read.ok) return read;
  const { values: v, warnings } = read;
  const publicUrl = (v.PUBLIC_URL ?? `http://localhost:${v.PORT}`).replace(/\/+$/, "");
  const host = v.HOST ?? (isLoopbackUrl(publicUrl) ? LOOPBACK_HOSTS : undefined);
  const development = isLocalDevelopment(publicUrl, host);
  if (!v.DATABASE_URL) {
    const dataDir = ensureDataDir(v.DATA_DIR);
    if (!dataDir.ok) return dataDir;
  }
  return {
    ok: true,
    warnings,
    config: {
      port: v.PORT,
      host,
      development,
      shutdownDrainMs: v.SHUTDOWN_DRAIN_MS ?? (development ? 0 : DEFAULT_DRAIN_MS),
      dataDir: v.DATA_DIR,
      databaseUrl: v.DATABASE_URL,
      ...toDatabaseSettings(v),
      agentpassUrl: v.AGENTPASS_URL.replace(/\/+$/, ""),
      agentpassPublicUrl: (v.AGENTPASS_PUBLIC_URL ?? v.AGENTPASS_URL).replace(/\/+$/, ""),
      partnerKey: v.AGENTPASS_PARTNER_KEY,
      agentpassTimeoutMs: v.AGENTPASS_TIMEOUT_MS,
      readerThreads: v.READER_THREADS,
      limits: {
        searchTimeoutMs: v.SEARCH_TIMEOUT_MS,
        maxNotesPerUser: v.MAX_NOTES_PER_USER,
        maxTextBytesPerUser: v.MAX_TEXT_BYTES_PER_USER,
      },
      publicUrl,
      logLevel: v.LOG_LEVEL,
      metricsToken: v.METRICS_TOKEN,
    },
  };
}
