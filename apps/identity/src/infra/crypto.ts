import { hash, randomBytes, randomFillSync, randomInt, timingSafeEqual } from "node:crypto";

/**
 * The crypto helpers every part uses: one place that says how secrets are drawn, hashed and
 * compared. Session-token sealing, which has a format of its own, is in `sealed-tokens.ts`.
 */

/** SHA-256, base64url: what is stored in place of a secret, so a leaked database reveals none. */
export function sha256(value: string): string {
  return hash("sha256", value, "base64url");
}

/** Compares two hashes (or any two secrets) in constant time. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** A fresh random secret of `bytes` bytes (256 bits by default), base64url. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** `length` characters drawn uniformly from `alphabet` by a CSPRNG (no modulo bias). */
export function randomString(alphabet: string, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/**
 * `length` (at most 256) fresh random bytes, cut from a 4 KB buffer refilled from the CSPRNG, each
 * byte handed out once (as Node's own `randomUUID` does). A `randomBytes` call costs a system
 * call each time, several times the rest of sealing a session token; this is for that hot path.
 */
export function pooledRandomBytes(length: number): Buffer {
  if (length > 256) return randomBytes(length);
  if (poolOffset + length > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += length;
  return Buffer.from(pool.subarray(poolOffset - length, poolOffset));
}

const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
