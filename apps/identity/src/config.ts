import { z } from "zod";

const port = z.coerce.number().int().min(0).max(65535);
const perMinute = z.coerce.number().int().min(1).max(1_000_000_000);

/** Every setting of the identity service; nothing else reads the environment. */
const ConfigSchema = z.object({
  PORT: port.default(4000),
  /** Interface to listen on; unset listens on every interface (IPv4 and IPv6). */
  HOST: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default("./data"),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL (leave it unset for SQLite)")
    .optional(),
  SESSION_TOKEN_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  PUBLIC_URL: z.url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** smtp(s)://user:pass@host:port for sign-in mail; unset: mail is written to the log. */
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL")
    .optional(),
  MAIL_FROM: z.string().min(3).default("AgentPass <no-reply@agentpass.local>"),
  /** redis:// URL: rate-limit counters go there instead of the database. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
    .optional(),
  /** Session tokens one user key may mint per minute. */
  MINTS_PER_MINUTE: perMinute.default(60),
  /** Failed verifications (bad session tokens) one partner key may ask per minute. */
  FAILED_VERIFIES_PER_MINUTE: perMinute.default(6000),
  /** Requests with an unknown or revoked key one client address may send per minute. */
  BAD_KEYS_PER_MINUTE: perMinute.default(60),
  /**
   * Sealing keys for session tokens as `id:base64secret` pairs, comma-separated, the first one
   * sealing new tokens. Unset: keys are generated on first start and kept in the database.
   */
  TOKEN_KEYS: z
    .string()
    .regex(
      /^[0-9a-f]{8}:[A-Za-z0-9+/_-]{43}=?(,[0-9a-f]{8}:[A-Za-z0-9+/_-]{43}=?)*$/,
      "must be comma-separated id:key pairs (8 hex characters, a colon, 32 bytes in base64)",
    )
    .optional(),
});

export interface Config {
  port: number;
  host: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  sessionTokenTtlSeconds: number;
  publicUrl: string;
  logLevel: z.infer<typeof ConfigSchema>["LOG_LEVEL"];
  tokenKeys: string | undefined;
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
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; error: string };

/** Reads the configuration from `env`; a bad value is reported with the variable's name. */
export function loadConfig(env: Record<string, string | undefined> = process.env): ConfigResult {
  // Empty variables count as unset, as in most shells' `VAR= command`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""));
  const parsed = ConfigSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "configuration");
    return { ok: false, error: `Invalid ${name}: ${issue?.message ?? "invalid value"}` };
  }
  const values = parsed.data;
  if (values.PUBLIC_URL?.startsWith("https://") && !values.SMTP_URL) {
    // Without SMTP, sign-in codes go to the log: fine on a laptop, never on a public server.
    return { ok: false, error: "Invalid SMTP_URL: required when PUBLIC_URL is https" };
  }
  return {
    ok: true,
    config: {
      port: values.PORT,
      host: values.HOST,
      dataDir: values.DATA_DIR,
      databaseUrl: values.DATABASE_URL,
      sessionTokenTtlSeconds: values.SESSION_TOKEN_TTL_SECONDS,
      publicUrl: (values.PUBLIC_URL ?? `http://localhost:${values.PORT}`).replace(/\/$/, ""),
      logLevel: values.LOG_LEVEL,
      tokenKeys: values.TOKEN_KEYS,
      smtpUrl: values.SMTP_URL,
      mailFrom: values.MAIL_FROM,
      redisUrl: values.REDIS_URL,
      rateLimits: {
        mintsPerMinute: values.MINTS_PER_MINUTE,
        failedVerifiesPerMinute: values.FAILED_VERIFIES_PER_MINUTE,
        badKeysPerMinute: values.BAD_KEYS_PER_MINUTE,
      },
    },
  };
}
