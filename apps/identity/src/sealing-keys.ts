import type { Clock } from "./clock.ts";
import type { Store } from "./store/store.ts";
import { generateSealingKey, type SealingKey, toSealingKey } from "./tokens.ts";

export interface SealingKeyRing {
  /** The key that seals new tokens. */
  current: SealingKey;
  /** Every key that may open a token, by id. */
  byId: ReadonlyMap<string, SealingKey>;
}

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
  return { current, byId: new Map(keys.map((key) => [key.id, key])) };
}
