import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hash,
  hkdfSync,
  type KeyObject,
  randomBytes,
  randomInt,
  timingSafeEqual,
} from "node:crypto";

/**
 * The crypto helpers every part uses: one place that says how secrets are drawn, hashed and
 * compared. Session-token sealing, which has a format of its own, is in `sealed-tokens.ts`.
 */

/** SHA-256, base64url: what is stored in place of a secret, so a leaked database reveals none. */
export function sha256(value: string): string {
  return hash("sha256", value, "base64url");
}

/**
 * A key of its own for one use of the service's secret: HKDF-SHA256 under `label`, so every
 * instance with the same secret derives the same key, and keys of different labels (and the
 * key-encryption key) share nothing.
 */
export function deriveServiceKey(secret: string | Buffer, label: string): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), label, 32)));
}

/**
 * HMAC-SHA256 of `value` under `key`, base64url: what is stored in place of a short secret (a
 * sign-in code, a device user code). A plain hash of a 6-digit code is inverted in seconds; this
 * one needs the key, which is derived from the service's secret and never in the database.
 */
export function keyedHash(key: KeyObject, value: string): string {
  return createHmac("sha256", key).update(value).digest("base64url");
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
 * Flash messages: what a form post leaves for the page it redirects to (a key shown once, a
 * notice), carried by the browser for a few seconds. The browser can neither read nor change
 * one: it is sealed with AES-256-GCM under a key of its own, derived from the service's secret.
 */
const FLASH_LABEL = "agentpass web flash v1";
const FLASH_PREFIX = "f1.";
const FLASH_NONCE_LENGTH = 12;
const FLASH_EXPIRY_LENGTH = 6;
const FLASH_TAG_LENGTH = 16;
/** A cookie holds at most 4 KiB: anything longer was not made here. */
const MAX_SEALED_FLASH_LENGTH = 4096;

/**
 * The key that seals flash messages: HKDF-SHA256 of the service's secret under a label of its
 * own, so every instance with the same secret derives the same key, and it shares nothing with
 * the key-encryption key derived from the same secret.
 */
export function deriveFlashKey(secret: string | Buffer): KeyObject {
  return deriveServiceKey(secret, FLASH_LABEL);
}

/**
 * `f1.` + base64url(nonce | AES-256-GCM(expiry in ms, 6 bytes | text) | tag), under a fresh
 * random nonce. `boundTo` is the associated data: the flash opens only for the same value (the
 * browser, session and page it was made for), so a copy sent from elsewhere does not open.
 */
export function sealFlash(
  key: KeyObject,
  flash: { text: string; boundTo: string; expiresAt: number },
): string {
  const nonce = randomBytes(FLASH_NONCE_LENGTH);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(flash.boundTo));
  const expiry = Buffer.alloc(FLASH_EXPIRY_LENGTH);
  expiry.writeUIntBE(flash.expiresAt, 0, FLASH_EXPIRY_LENGTH);
  const ciphertext = Buffer.concat([
    cipher.update(expiry),
    cipher.update(flash.text, "utf8"),
    cipher.final(),
  ]);
  return (
    FLASH_PREFIX + Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]).toString("base64url")
  );
}

/** The text of a sealed flash, or null when it is not one of ours, not bound to `boundTo`, or expired at `now`. */
export function openFlash(
  key: KeyObject,
  sealed: string,
  boundTo: string,
  now: number,
): string | null {
  if (sealed.length > MAX_SEALED_FLASH_LENGTH || !sealed.startsWith(FLASH_PREFIX)) return null;
  const bytes = Buffer.from(sealed.slice(FLASH_PREFIX.length), "base64url");
  if (bytes.length < FLASH_NONCE_LENGTH + FLASH_EXPIRY_LENGTH + FLASH_TAG_LENGTH) return null;
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, FLASH_NONCE_LENGTH), {
    authTagLength: FLASH_TAG_LENGTH,
  });
  decipher.setAAD(Buffer.from(boundTo));
  decipher.setAuthTag(bytes.subarray(bytes.length - FLASH_TAG_LENGTH));
  let plain: Buffer;
  try {
    plain = Buffer.concat([
      decipher.update(bytes.subarray(FLASH_NONCE_LENGTH, bytes.length - FLASH_TAG_LENGTH)),
      decipher.final(),
    ]);
  } catch {
    return null; // another key, another binding, or changed on the way
  }
  if (plain.readUIntBE(0, FLASH_EXPIRY_LENGTH) <= now) return null;
  return plain.subarray(FLASH_EXPIRY_LENGTH).toString("utf8");
}
