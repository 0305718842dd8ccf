import { randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { type Config, SecretSchema } from "../config.ts";
import {
  CLOCK_SKEW_MS,
  deriveKeyEncryptionKey,
  generateSealingKey,
  generateSecret,
  openSessionToken,
  type SealingKey,
  type SessionClaims,
  toSealingKey,
  unwrapSealingKey,
  wrapSealingKey,
} from "../infra/sealed-tokens.ts";
import type { Store, StoredSealingKey } from "../store/store.ts";
import type { Clock } from "./clock.ts";

export interface SealingKeyRing {
  /** Where the keys are kept: the database, or TOKEN_KEYS (which no command changes). */
  readonly source: "database" | "env";
  /** The key that seals new tokens: the newest. */
  readonly current: SealingKey;
  /**
   * Opens a token (see `openSessionToken`), remembering every token it saw, opened or not: an
   * agent sends the same token with many requests, a forgery sent again must cost what a real
   * token costs, and what a token says never changes, so this cache cannot outlive a revocation
   * (it is emptied when the keys change); expiry is checked by the caller.
   * A key retired by a newer one opens no token issued after its retirement (+ clock skew).
   */
  open(token: string): SessionClaims | null;
  /** The keys, newest first, without their secrets. */
  list(): SealingKeyInfo[];
  /**
   * Ids of the stored keys that did not unwrap under this instance's secret when it last read
   * them: made by an instance under another secret. Tokens they seal fail here, so the instance
   * is not ready (`/readyz`) until it restarts with that secret.
   */
  keysNotUnwrapped(): readonly string[];
  /** Adds a key that seals from then on; every instance takes it up on its next request. */
  rotate(): Promise<KeyChange<{ id: string }>>;
  /**
   * Wraps every key under `secret` instead, in one transaction. When the old secret came from
   * DATA_DIR/identity.secret, the file is replaced; else AGENTPASS_SECRET must change everywhere.
   */
  rewrap(secret: string): Promise<KeyChange<{ count: number; secretFile: string | null }>>;
}

export interface SealingKeyInfo {
  id: string;
  /** Epoch milliseconds; null for keys given in TOKEN_KEYS. */
  createdAt: number | null;
  sealing: boolean;
  /** When a newer key took over (epoch milliseconds), or null. */
  retiredAt: number | null;
}

/**
 * KEYS_FROM_ENV: the keys come from TOKEN_KEYS, not the database. KEYS_CHANGED: another process
 * changed the keys (or their secret) since this one read them; nothing was written.
 */
type KeyChange<T> = ({ ok: true } & T) | { ok: false; code: "KEYS_FROM_ENV" | "KEYS_CHANGED" };

const MAX_OPENED = 10_000;
const SECRET_FILE_NAME = "identity.secret";

interface RingEntry {
  key: SealingKey;
  createdAt: number | null;
}

/**
 * The server's sealing keys: from `TOKEN_KEYS` when given (first one seals, nothing stored),
 * otherwise from the database, wrapped under the secret (AGENTPASS_SECRET, or
 * DATA_DIR/identity.secret made on the first start). Keys and secret are never logged.
 *
 * A database whose keys do not unwrap under this secret — a copy without it — is refused with an
 * error before anything is written. The first start on an empty database adds one key (however
 * many processes start together) and wraps keys older releases kept in clear.
 */
export async function loadSealingKeys(
  store: Store,
  config: Pick<Config, "tokenKeys" | "secret" | "dataDir">,
  clock: Clock,
  logger: Logger,
): Promise<SealingKeyRing> {
  if (config.tokenKeys) {
    const entries = config.tokenKeys.map((key) => ({
      key: toSealingKey(key.id, key.secret),
      createdAt: null,
    }));
    const fromEnv = async () => ({ ok: false, code: "KEYS_FROM_ENV" }) as const;
    return createRing(entries, {
      source: "env",
      rotate: fromEnv,
      rewrap: fromEnv,
      keysNotUnwrapped: () => [],
    });
  }
  return loadStoredKeys(store, config, clock, logger);
}

async function loadStoredKeys(
  store: Store,
  config: Pick<Config, "secret" | "dataDir">,
  clock: Clock,
  logger: Logger,
): Promise<SealingKeyRing> {
  const secretFile = join(config.dataDir, SECRET_FILE_NAME);
  const refuse = (): never => {
    throw new Error(
      `Sealing keys in the database were wrapped under another secret: set AGENTPASS_SECRET (or restore ${secretFile}) to the secret they were made with`,
    );
  };
  const found = await store.listSealingKeys();
  // A new secret only for a database that holds no wrapped key: with one, the secret is missing.
  const secret =
    config.secret ??
    readSecretFile(secretFile) ??
    (found.some((row) => row.wrapped !== null) ? refuse() : createSecretFile(secretFile));
  let kek = deriveKeyEncryptionKey(secret);
  const known = new Map<string, SealingKey>();
  const unwrap = (row: StoredSealingKey) => {
    const key = known.get(row.id) ?? (row.wrapped && unwrapSealingKey(kek, row.id, row.wrapped));
    if (key) known.set(row.id, key);
    return key || undefined;
  };

  // Nothing is written before every wrapped key unwraps: a copy of the database under another
  // secret must neither add a key nor overwrite one.
  for (const row of found) if (row.wrapped !== null && !unwrap(row)) refuse();
  if (found.length === 0) {
    const key = generateSealingKey();
    const first = { id: key.id, wrapped: wrapSealingKey(kek, key), createdAt: clock() };
    await store.addSealingKey(first, null); // false: another process added the first key
  }
  for (const row of found) {
    if (row.secret === null) continue;
    const key = toSealingKey(row.id, Buffer.from(row.secret, "base64"));
    if (key.secret.length !== 32) throw new Error(`Sealing key ${row.id} is not 32 bytes`);
    await store.wrapSealingKeyInPlace(row.id, row.secret, wrapSealingKey(kek, key));
  }
  const rows = await store.listSealingKeys();
  const entries = rows.map((row) => ({ key: unwrap(row) ?? refuse(), createdAt: row.createdAt }));

  const skipped = new Set<string>();
  let notUnwrapped: readonly string[] = [];
  /** Re-reads the keys when the database may have changed; unwraps only ids it does not know. */
  async function reload(): Promise<void> {
    const next: RingEntry[] = [];
    const failed: string[] = [];
    for (const row of await store.listSealingKeys()) {
      const key = unwrap(row);
      if (key) next.push({ key, createdAt: row.createdAt });
      else {
        // Added by an instance with another secret, or left in clear: never trusted, and a
        // request must not fail for it; readiness fails instead (`keysNotUnwrapped`).
        failed.push(row.id);
        if (skipped.has(row.id)) continue;
        skipped.add(row.id);
        logger.error({ sealingKeyId: row.id }, "sealing key does not unwrap under this secret");
      }
    }
    notUnwrapped = failed;
    if (next.length > 0 && !sameKeys(ring.entries(), next)) ring.install(next);
  }

  async function rotate(): Promise<KeyChange<{ id: string }>> {
    const rows = await store.listSealingKeys();
    const newest = rows[0];
    if (!newest?.wrapped || !unwrapSealingKey(kek, newest.id, newest.wrapped)) {
      return { ok: false, code: "KEYS_CHANGED" };
    }
    let key = generateSealingKey();
    while (rows.some((row) => row.id === key.id)) key = generateSealingKey();
    const added = await store.addSealingKey(
      { id: key.id, wrapped: wrapSealingKey(kek, key), createdAt: clock() },
      { id: newest.id, wrapped: newest.wrapped },
    );
    if (!added) return { ok: false, code: "KEYS_CHANGED" };
    await reload();
    return { ok: true, id: key.id };
  }

  /**
   * Unwraps every key with the current secret and wraps it under `newSecret`, in one
   * transaction. When the secret came from DATA_DIR/identity.secret, the new one is written
   * beside it before the commit and takes its place after.
   */
  async function rewrap(newSecret: string) {
    const next = deriveKeyEncryptionKey(newSecret);
    const keys: { id: string; from: string; to: string }[] = [];
    for (const row of await store.listSealingKeys()) {
      const key = row.wrapped && unwrapSealingKey(kek, row.id, row.wrapped);
      if (!row.wrapped || !key) return { ok: false, code: "KEYS_CHANGED" } as const;
      keys.push({ id: row.id, from: row.wrapped, to: wrapSealingKey(next, key) });
    }
    const staged = config.secret ? undefined : stageSecretFile(secretFile, newSecret);
    if (!(await store.rewrapSealingKeys(keys))) {
      if (staged) rmSync(staged, { force: true });
      return { ok: false, code: "KEYS_CHANGED" } as const;
    }
    if (staged) installFile(staged, secretFile);
    kek = next;
    return { ok: true, count: keys.length, secretFile: staged ? secretFile : null } as const;
  }

  const ring = createRing(entries, {
    source: "database",
    rotate,
    rewrap,
    keysNotUnwrapped: () => notUnwrapped,
  });
  store.onKeysChanged(reload);
  return ring;
}

/** A ring over `entries` (newest first), which `install` replaces. */
function createRing(
  initial: RingEntry[],
  changes: Pick<SealingKeyRing, "source" | "rotate" | "rewrap" | "keysNotUnwrapped">,
): SealingKeyRing & { entries(): readonly RingEntry[]; install(entries: RingEntry[]): void } {
  let entries: RingEntry[] = [];
  let byId = new Map<string, SealingKey>();
  // What each token recently seen opened to (null: it did not), wrapped as lru-cache stores no null.
  const opened = new LRUCache<string, { claims: SessionClaims | null }>({ max: MAX_OPENED });
  const ring = {
    get current(): SealingKey {
      return (entries[0] as RingEntry).key;
    },
    open(token: string): SessionClaims | null {
      const known = opened.get(token);
      if (known) return known.claims;
      // Tokens that do not open are remembered too: a forged token sent again is refused as
      // fast as a real one, so the time of a refusal does not tell which it was.
      const claims = openSessionToken(byId, token);
      opened.set(token, { claims });
      return claims;
    },
    list: () =>
      entries.map(({ key, createdAt }, index) => ({
        id: key.id,
        createdAt,
        sealing: index === 0,
        retiredAt: entries[index - 1]?.createdAt ?? null,
      })),
    entries: () => entries,
    install(next: RingEntry[]) {
      if (next.length === 0) throw new Error("No sealing key");
      // Each key stops opening tokens issued after the next newer key was made (+ skew).
      entries = next.map(({ key, createdAt }, index) => {
        const retiredAt = next[index - 1]?.createdAt ?? null;
        const opensIssuedUntil = retiredAt === null ? Infinity : retiredAt + CLOCK_SKEW_MS;
        return { key: { ...key, opensIssuedUntil }, createdAt };
      });
      byId = new Map(entries.map(({ key }) => [key.id, key]));
      opened.clear(); // a token remembered before may be one a key no longer opens
    },
    ...changes,
  };
  ring.install(initial);
  return ring;
}

function sameKeys(a: readonly RingEntry[], b: readonly RingEntry[]): boolean {
  return (
    a.length === b.length &&
    a.every((entry, i) => entry.key.id === b[i]?.key.id && entry.createdAt === b[i]?.createdAt)
  );
}

/**
 * The secret other keys of the service are derived from (each under a label of its own), once
 * `loadSealingKeys` ran: AGENTPASS_SECRET, else DATA_DIR/identity.secret; with TOKEN_KEYS and
 * neither, the first of those keys, which every instance shares too.
 */
export function serviceSecret(
  config: Pick<Config, "tokenKeys" | "secret" | "dataDir">,
): string | Buffer {
  const secret =
    config.secret ??
    readSecretFile(join(config.dataDir, SECRET_FILE_NAME)) ??
    config.tokenKeys?.[0]?.secret;
  if (secret === undefined) throw new Error("No service secret: load the sealing keys first");
  return secret;
}

/** The secret kept in DATA_DIR/identity.secret, or undefined when there is no such file. */
function readSecretFile(path: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const secret = text.trim();
  if (!SecretSchema.safeParse(secret).success) {
    throw new Error(`${path} must hold a secret of at least 32 characters`);
  }
  return secret;
}

/**
 * Makes DATA_DIR/identity.secret (mode 0600) unless a process starting beside this one did
 * first, and returns the secret that stands. It is written whole and synced under a name of its
 * own, then linked into place, which fails if the name exists: no process reads half a secret.
 */
function createSecretFile(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  const draft = `${path}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(draft, generateSecret(), { mode: 0o600, flag: "wx", flush: true });
  try {
    linkSync(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  syncDirectory(dirname(path));
  const secret = readSecretFile(path);
  if (!secret) throw new Error(`${path} vanished as it was made`);
  return secret;
}

/** Writes `secret` beside `path` (mode 0600, synced), to take its place with `installFile`. */
function stageSecretFile(path: string, secret: string): string {
  const staged = `${path}.new`;
  rmSync(staged, { force: true }); // a leftover would keep its own mode
  writeFileSync(staged, secret, { mode: 0o600, flag: "wx", flush: true });
  return staged;
}

/** Renames `staged` over `path`: a reader sees the old file or the new one, never a mix. */
function installFile(staged: string, path: string): void {
  renameSync(staged, path);
  syncDirectory(dirname(path));
}

function syncDirectory(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
