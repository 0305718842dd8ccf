import { crc32 } from "node:zlib";
import { randomString, sha256 } from "../infra/crypto.ts";

/** The two long-lived secrets. Distinct prefixes mean one can never pass for the other. */
export type KeyKind = "user" | "partner";

const PREFIXES: Record<KeyKind, string> = { user: "apu_", partner: "apk_" };
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 32 base62 characters carry 190 bits of entropy. */
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_LENGTH = 4 + RANDOM_LENGTH + CHECKSUM_LENGTH;
const BODY = /^[0-9A-Za-z]+$/;
/** How much of a key is kept in clear, to show people which key is which. */
const DISPLAY_LENGTH = 4 + 8;

/** Makes a new key: prefix, random base62 body, and a CRC32 checksum (GitHub's format). */
export function generateKey(kind: KeyKind): string {
  const body = PREFIXES[kind] + randomString(ALPHABET, RANDOM_LENGTH);
  return body + checksumOf(body);
}

/**
 * Whether `key` has the shape and checksum of a key of `kind`. Typos, truncations and keys of
 * the other kind are refused here, before any database query.
 */
export function isWellFormedKey(kind: KeyKind, key: string): boolean {
  if (key.length !== KEY_LENGTH || !key.startsWith(PREFIXES[kind])) return false;
  if (!BODY.test(key.slice(4))) return false;
  // The checksum's characters compared one by one, last first, as `checksumOf` writes them:
  // on every verify and mint, so no string is built for it.
  let value = crc32(key.slice(0, KEY_LENGTH - CHECKSUM_LENGTH));
  for (let i = KEY_LENGTH - 1; i >= KEY_LENGTH - CHECKSUM_LENGTH; i--) {
    if (key[i] !== ALPHABET[value % 62]) return false;
    value = Math.floor(value / 62);
  }
  return true;
}

/**
 * What is stored in place of a key: its SHA-256, so a leaked database reveals no key. One-shot
 * `hash` rather than a `Hash` object: it runs on every verify and mint.
 */
export function hashKey(key: string): string {
  return sha256(key);
}

/** The part of a key that may be shown again after creation, e.g. `apu_3kT9xQ2m`. */
export function displayPrefixOf(key: string): string {
  return key.slice(0, DISPLAY_LENGTH);
}

function checksumOf(body: string): string {
  let value = crc32(body);
  let out = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = ALPHABET[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}
