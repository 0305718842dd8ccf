import { availableParallelism } from "node:os";
import { type DatabaseSettings, databaseSettings, toDatabaseSettings } from "@agentpass/db";
import { LOOPBACK_HOSTS } from "@agentpass/http";
import { z } from "zod";
import { DEFAULT_NOTES_LIMITS, type NotesLimits } from "./store/limits.ts";

/** Every setting of the notes API; nothing else reads the environment. */
const ConfigSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(4001),
  /** Interface to listen on; unset: every interface, or the loopback ones without PUBLIC_URL. */
  HOST: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL (leave it unset for SQLite)")
    .optional(),
  ...databaseSettings,
  AGENTPASS_URL: z.url().default("http://localhost:4000"),
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
  PUBLIC_URL: z.url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

export interface NotesConfig extends DatabaseSettings {
  port: number;
  /** Where to listen (`ServerOptions.host`); unset: every interface. */
  host: string | readonly string[] | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  agentpassUrl: string;
  partnerKey: string | undefined;
  agentpassTimeoutMs: number;
  readerThreads: number;
  limits: NotesLimits;
  publicUrl: string;
  logLevel: z.infer<typeof ConfigSchema>["LOG_LEVEL"];
}

export type NotesConfigResult = { ok: true; config: NotesConfig } | { ok: false; error: string };

/** Reads the configuration from `env`; a bad value is reported with the variable's name. */
export function loadNotesConfig(
  env: Record<string, string | undefined> = process.env,
): NotesConfigResult {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "configuration");
    return { ok: false, error: `Invalid ${name}: ${issue?.message ?? "invalid value"}` };
  }
  const v = parsed.data;
  return {
    ok: true,
    config: {
      port: v.PORT,
      host: v.HOST ?? (v.PUBLIC_URL ? undefined : LOOPBACK_HOSTS),
      dataDir: v.DATA_DIR,
      databaseUrl: v.DATABASE_URL,
      ...toDatabaseSettings(v),
      agentpassUrl: v.AGENTPASS_URL.replace(/\/+$/, ""),
      partnerKey: v.AGENTPASS_PARTNER_KEY,
      agentpassTimeoutMs: v.AGENTPASS_TIMEOUT_MS,
      readerThreads: v.READER_THREADS,
      limits: {
        searchTimeoutMs: v.SEARCH_TIMEOUT_MS,
        maxNotesPerUser: v.MAX_NOTES_PER_USER,
        maxTextBytesPerUser: v.MAX_TEXT_BYTES_PER_USER,
      },
      publicUrl: (v.PUBLIC_URL ?? `http://localhost:${v.PORT}`).replace(/\/+$/, ""),
      logLevel: v.LOG_LEVEL,
    },
  };
}
