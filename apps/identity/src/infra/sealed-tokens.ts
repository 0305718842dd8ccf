import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from "node:crypto";

/**
 * Session tokens are sealed, not signed: AES-256-GCM over a small binary payload, so a partner
 * learns nothing from a token (no email, no ids) and must ask AgentPass.
 *
 * Layout (then base64url, after the `aps_` prefix):
 *   version (1) | key id (4) | salt (32) | ciphertext | GCM tag (16)
 * Every token gets its own AES key: HMAC-SHA256(server key, label || salt) with a fresh 256-bit
 * random salt (a one-block SP 800-108 KDF, HKDF-Expand's own building block). A key seals exactly
 * one token, so the fixed nonce never meets the same key twice, at any volume. The version and
 * key id are authenticated as associated data.
 *
 * Node imports a raw key Buffer into OpenSSL for every cipher or HMAC it makes, which would cost
 * more than the rest of opening a token; the server key is imported once, as a KeyObject.
 */
export interface SealingKey {
  /** 8 hex characters (4 bytes), carried in every token so keys can rotate. */
  id: string;
  /** 32 random bytes. */
  secret: Buffer;
  /** `secret`, imported once. */
  keyObject: KeyObject;
  /**
   * Tokens issued after this (epoch milliseconds) do not open: a newer key retired this one then
   * (plus `CLOCK_SKEW_MS`). Infinity while the key seals. So once a leaked key is rotated out,
   * whoever holds it can no longer forge fresh tokens, while tokens it sealed before still open.
   */
  opensIssuedUntil: number;
}

export interface SessionClaims {
  userKeyId: string;
  accountId: string;
  /** Epoch milliseconds. */
  issuedAt: number;
  /** Epoch milliseconds; the token is valid while now < expiresAt. */
  expiresAt: number;
  /** Partner id the token is bound to, or null for any partner. */
  audience: string | null;
  /**
   * The RFC 7638 thumbprint (SHA-256, base64url) of the key the token is bound to (RFC 9449
   * `cnf.jkt`): it is good only with a proof signed by that key. Absent: a bearer token.
   */
  jkt?: string;
  /** The agent that minted the token (`agt_…`, `domain/agents.ts`); absent: no agent. */
  agentId?: string;
}

const SESSION_TOKEN_PREFIX = "aps_";
const VERSION = 1;
const HEADER_LENGTH = 1 + 4;
const SALT_LENGTH = 32;
const TAG_LENGTH = 16;
const UUID_LENGTH = 16;
const TIME_LENGTH = 6;
const PAYLOAD_LENGTH = UUID_LENGTH * 2 + TIME_LENGTH * 2 + 1;
const MIN_LENGTH = HEADER_LENGTH + SALT_LENGTH + PAYLOAD_LENGTH + TAG_LENGTH;
const JKT_LENGTH = 32;
const AGENT_LENGTH = 16;
const MAX_LENGTH = MIN_LENGTH + UUID_LENGTH + JKT_LENGTH + AGENT_LENGTH;
/** The payload's last fixed byte: which optional fields follow (audience, jkt, then agent). */
const HAS_AUDIENCE = 1;
const HAS_JKT = 2;
const HAS_AGENT = 4;
const AGENT_ID = /^agt_[A-Za-z0-9_-]{22}$/;
const JKT = /^[A-Za-z0-9_-]{43}$/;
const MAX_TOKEN_CHARS = SESSION_TOKEN_PREFIX.length + Math.ceil((MAX_LENGTH * 4) / 3);
const KDF_LABEL = Buffer.from("agentpass session token v1");
const NONCE = Buffer.alloc(12);
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const KEY_ID = /^[0-9a-f]{8}$/;

/** How far clocks of instances may disagree: a token from up to this far ahead still opens. */
export const CLOCK_SKEW_MS = 60_000;

export function generateSealingKey(): SealingKey {
  return toSealingKey(randomBytes(4).toString("hex"), randomBytes(32));
}

export function toSealingKey(id: string, secret: Buffer, opensIssuedUntil = Infinity): SealingKey {
  return { id, secret, keyObject: createSecretKey(secret), opensIssuedUntil };
}

/** Seals `claims` under `key`. Pure CPU: minting writes nothing. */
export function sealSessionToken(key: SealingKey, claims: SessionClaims): string {
  const header = Buffer.alloc(HEADER_LENGTH);
  header.writeUInt8(VERSION, 0);
  header.write(key.id, 1, "hex");
  // Straight from the CSPRNG: each salt is what keeps one key from sealing two tokens.
  const salt = randomBytes(SALT_LENGTH);
  const cipher = createCipheriv("aes-256-gcm", deriveTokenKey(key, salt), NONCE);
  cipher.setAAD(header);
  const ciphertext = Buffer.concat([cipher.update(encodeClaims(claims)), cipher.final()]);
  const sealed = Buffer.concat([header, salt, ciphertext, cipher.getAuthTag()]);
  return SESSION_TOKEN_PREFIX + sealed.toString("base64url");
}

/**
 * Opens a token sealed by one of `keys`. Any tampering, unknown key id or malformed input gives
 * null; the caller checks expiry and audience. Every failure looks the same to the caller.
 */
export function openSessionToken(
  keys: ReadonlyMap<string, SealingKey>,
  token: string,
): SessionClaims | null {
  if (token.length > MAX_TOKEN_CHARS || !token.startsWith(SESSION_TOKEN_PREFIX)) return null;
  const encoded = token.slice(SESSION_TOKEN_PREFIX.length);
  if (!BASE64URL.test(encoded)) return null;
  const sealed = Buffer.from(encoded, "base64url");
  // Non-canonical base64url (stray trailing bits) would let two strings open to one token.
  if (sealed.length < MIN_LENGTH || sealed.length > MAX_LENGTH) return null;
  if (sealed.toString("base64url") !== encoded) return null;
  if (sealed.readUInt8(0) !== VERSION) return null;
  const key = keys.get(sealed.toString("hex", 1, HEADER_LENGTH));
  if (!key) return null;
  const header = sealed.subarray(0, HEADER_LENGTH);
  const salt = sealed.subarray(HEADER_LENGTH, HEADER_LENGTH + SALT_LENGTH);
  const ciphertext = sealed.subarray(HEADER_LENGTH + SALT_LENGTH, sealed.length - TAG_LENGTH);
  const decipher = createDecipheriv("aes-256-gcm", deriveTokenKey(key, salt), NONCE, {
    authTagLength: TAG_LENGTH,
  });
  decipher.setAAD(header);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_LENGTH));
  let claims: SessionClaims | null;
  try {
    claims = decodeClaims(Buffer.concat([decipher.update(ciphertext), decipher.final()]));
  } catch {
    return null; // authentication failed: tampered or forged
  }
  return claims && claims.issuedAt <= key.opensIssuedUntil ? claims : null;
}

function deriveTokenKey(key: SealingKey, salt: Buffer): KeyObject {
  return createSecretKey(
    createHmac("sha256", key.keyObject).update(KDF_LABEL).update(salt).digest(),
  );
}

/**
 * The payload: key id, account id, issued, expires, a flags byte, then the audience, the jkt and
 * the agent id (16 bytes) when their flag is set. A token without a jkt or agent is byte for
 * byte what it was before they existed (flags 0 or 1), so the releases beside this one open each
 * other's bearer tokens; a bound or agent's token (flag 2 or 4) does not open in a release that
 * does not know it, which refuses it rather than taking it for a plain bearer token.
 */
function encodeClaims(claims: SessionClaims): Buffer {
  if (claims.jkt !== undefined && !JKT.test(claims.jkt)) throw new Error("malformed jkt");
  if (claims.agentId !== undefined && !AGENT_ID.test(claims.agentId)) {
    throw new Error("malformed agent id");
  }
  const out = Buffer.alloc(
    PAYLOAD_LENGTH +
      (claims.audience ? UUID_LENGTH : 0) +
      (claims.jkt ? JKT_LENGTH : 0) +
      (claims.agentId ? AGENT_LENGTH : 0),
  );
  let offset = writeUuid(out, claims.userKeyId, 0);
  offset = writeUuid(out, claims.accountId, offset);
  offset = out.writeUIntBE(claims.issuedAt, offset, TIME_LENGTH);
  offset = out.writeUIntBE(claims.expiresAt, offset, TIME_LENGTH);
  const flags =
    (claims.audience ? HAS_AUDIENCE : 0) |
    (claims.jkt ? HAS_JKT : 0) |
    (claims.agentId ? HAS_AGENT : 0);
  offset = out.writeUInt8(flags, offset);
  if (claims.audience) offset = writeUuid(out, claims.audience, offset);
  if (claims.jkt) offset += out.write(claims.jkt, offset, JKT_LENGTH, "base64url");
  if (claims.agentId) out.write(claims.agentId.slice(4), offset, AGENT_LENGTH, "base64url");
  return out;
}

function decodeClaims(payload: Buffer): SessionClaims | null {
  const flags = payload.readUInt8(PAYLOAD_LENGTH - 1);
  if ((flags & ~(HAS_AUDIENCE | HAS_JKT | HAS_AGENT)) !== 0) return null;
  const audienceLength = flags & HAS_AUDIENCE ? UUID_LENGTH : 0;
  const jktLength = flags & HAS_JKT ? JKT_LENGTH : 0;
  const agentLength = flags & HAS_AGENT ? AGENT_LENGTH : 0;
  if (payload.length !== PAYLOAD_LENGTH + audienceLength + jktLength + agentLength) return null;
  const claims: SessionClaims = {
    userKeyId: readUuid(payload, 0),
    accountId: readUuid(payload, UUID_LENGTH),
    issuedAt: payload.readUIntBE(UUID_LENGTH * 2, TIME_LENGTH),
    expiresAt: payload.readUIntBE(UUID_LENGTH * 2 + TIME_LENGTH, TIME_LENGTH),
    audience: audienceLength ? readUuid(payload, PAYLOAD_LENGTH) : null,
  };
  if (jktLength) {
    const start = PAYLOAD_LENGTH + audienceLength;
    claims.jkt = payload.toString("base64url", start, start + JKT_LENGTH);
  }
  if (agentLength) {
    const start = PAYLOAD_LENGTH + audienceLength + jktLength;
    claims.agentId = `agt_${payload.toString("base64url", start, start + AGENT_LENGTH)}`;
  }
  return claims;
}

function writeUuid(out: Buffer, uuid: string, offset: number): number {
  return offset + out.write(uuid.replaceAll("-", ""), offset, UUID_LENGTH, "hex");
}

function readUuid(buffer: Buffer, offset: number): string {
  const hex = buffer.toString("hex", offset, offset + UUID_LENGTH);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Sealing keys are kept in the database wrapped (AES-256-GCM) under a key-encryption key that is
 * not in the database: a copy of the database (a backup, a replica, an injected SELECT) forges
 * no token. The KEK is HKDF-SHA256 of a secret (AGENTPASS_SECRET or DATA_DIR/identity.secret).
 */
const WRAP_LABEL = Buffer.from("agentpass sealing-key wrap v1");
const WRAP_PREFIX = "v1.";
const WRAP_NONCE_LENGTH = 12;
const SEALING_KEY_LENGTH = 32;

/** A fresh secret for DATA_DIR/identity.secret: 32 random bytes, base64url. */
export function generateSecret(): string {
  return randomBytes(32).toString("base64url");
}

export function deriveKeyEncryptionKey(secret: string): KeyObject {
  const kek = hkdfSync("sha256", secret, Buffer.alloc(0), WRAP_LABEL, 32);
  return createSecretKey(Buffer.from(kek));
}

/**
 * `v1.` + base64url(nonce | ciphertext | tag), under a fresh random nonce. The key id is the
 * associated data, so a wrapped value moved to another row does not unwrap.
 */
export function wrapSealingKey(kek: KeyObject, key: SealingKey): string {
  const nonce = randomBytes(WRAP_NONCE_LENGTH);
  const cipher = createCipheriv("aes-256-gcm", kek, nonce);
  cipher.setAAD(Buffer.from(key.id));
  const ciphertext = Buffer.concat([cipher.update(key.secret), cipher.final()]);
  return (
    WRAP_PREFIX + Buffer.concat([nonce, ciphertext, cipher.getAuthTag()]).toString("base64url")
  );
}

/** The key wrapped in `wrapped` under `id`, or null when `kek` (or the id) is not the one. */
export function unwrapSealingKey(kek: KeyObject, id: string, wrapped: string): SealingKey | null {
  if (!KEY_ID.test(id) || !wrapped.startsWith(WRAP_PREFIX)) return null;
  const sealed = Buffer.from(wrapped.slice(WRAP_PREFIX.length), "base64url");
  if (sealed.length !== WRAP_NONCE_LENGTH + SEALING_KEY_LENGTH + TAG_LENGTH) return null;
  const decipher = createDecipheriv("aes-256-gcm", kek, sealed.subarray(0, WRAP_NONCE_LENGTH), {
    authTagLength: TAG_LENGTH,
  });
  decipher.setAAD(Buffer.from(id));
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_LENGTH));
  const ciphertext = sealed.subarray(WRAP_NONCE_LENGTH, sealed.length - TAG_LENGTH);
  try {
    return toSealingKey(id, Buffer.concat([decipher.update(ciphertext), decipher.final()]));
  } catch {
    return null; // another secret, or a value from another row
  }
}
