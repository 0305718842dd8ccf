import type { Clock } from "./clock.ts";
import type { Store } from "./store/store.ts";
import {
  generateSealingKey,
  openSessionToken,
  type SealingKey,
  type SessionClaims,
  toSealingKey,
} from "./tokens.ts";

export interface SealingKeyRing {
  /** The key that seals new tokens. */
  current: SealingKey;
  /** Every key that may open a token, by id. */
  byId: ReadonlyMap<string, SealingKey>;
  /**
   * Opens a token (see `openSessionToken`), remembering tokens that opened: an agent sends the
   * same token with many requests, and opening one costs ~15-40 µs of crypto. What a token says
   * never changes, so this cache cannot outlive a revocation; expiry is checked by the caller.
   */
  open(token: string): SessionClaims | null;
}

const MAX_OPENED = 10_000;

/**
 * The server's sealing keys: from `TOKEN_KEYS` when given (first one seals), otherwise from the
 * database, where the first start generates one. Keys never leave the server and are never logged.
 */
export async function loadSealingKeys(
  store: Store,
  tokenKeys: string | undefined,
  clock: Clock,
): Promise<SealingKeyRing> {
  let keys: SealingKey[];
  if (tokenKeys) {
    keys = tokenKeys.split(",").map((pair) => {
      const [id = "", secret = ""] = pair.split(":");
      return toSealingKey(id, Buffer.from(secret, "base64"));
    });
  } else {
    let stored = await store.listSealingKeys();
    if (stored.length === 0) {
      const key = generateSealingKey();
      await store.insertSealingKey({
        id: key.id,
        secret: key.secret.toString("base64"),
        createdAt: clock(),
      });
      // Read back: when two processes start together, both must use the same keys.
      stored = await store.listSealingKeys();
    }
    keys = stored.map((row) => toSealingKey(row.id, Buffer.from(row.secret, "base64")));
  }
  const current = keys[0];
  if (!current || keys.some((key) => key.secret.length !== 32)) {
    throw new Error("Sealing keys must be 32 bytes each");
  }
  const byId = new Map(keys.map((key) => [key.id, key]));
  let opened = new Map<string, SessionClaims>();
  return {
    current,
    byId,
    open(token) {
      const known = opened.get(token);
      if (known) return known;
      const claims = openSessionToken(byId, token);
      if (claims) {
        if (opened.size >= MAX_OPENED) opened = new Map();
        opened.set(token, claims);
      }
      return claims;
    },
  };
}
