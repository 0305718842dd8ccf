import {
  calculateJwkThumbprint,
  decodeJwt,
  decodeProtectedHeader,
  importJWK,
  type JWK,
  type JWTPayload,
  jwtVerify,
} from "jose";

/**
 * The Agent Auth Protocol's JWTs (sections 4.2, 4.3, 8.2): short-lived, signed with an Ed25519
 * key (`EdDSA`), typed so a host's JWT is never taken for an agent's. This file checks form,
 * signature and time; who the key belongs to, and the one-time `jti`, are `domain/agents.ts`'s.
 */

/** `EdDSA` (RFC 8037) as the protocol names it, and its fully specified name (RFC 9864). */
const ALGORITHMS = ["EdDSA", "Ed25519"];
/** Section 8.2: at most 30 seconds of clock skew, either way. */
export const CLOCK_SKEW_S = 30;
/** The longest life a JWT may claim: the protocol says 60 s should do; 5 minutes is refused. */
const MAX_LIFETIME_S = 300;
const MAX_JWT_CHARS = 8192;
const JTI = /^[\x21-\x7e]{1,128}$/;

export type JwtType = "host+jwt" | "agent+jwt";

/** What a JWT says before its signature is checked: enough to find its key. */
export interface UnverifiedJwt {
  header: { typ: string; alg: string };
  payload: JWTPayload;
}

/** A JWT's header and claims, read without trusting them; null when it is not a JWT of `typ`. */
export function readJwt(token: string, typ: JwtType): UnverifiedJwt | string {
  if (token.length > MAX_JWT_CHARS) return "The JWT is too long";
  let header: ReturnType<typeof decodeProtectedHeader>;
  let payload: JWTPayload;
  try {
    header = decodeProtectedHeader(token);
    payload = decodeJwt(token);
  } catch {
    return "Not a JWT";
  }
  if (header.typ !== typ) return `The JWT's typ must be "${typ}"`;
  if (typeof header.alg !== "string" || !ALGORITHMS.includes(header.alg)) {
    return "The JWT's alg must be EdDSA";
  }
  return { header: { typ: header.typ, alg: header.alg }, payload };
}

/** Whether a bearer token is an agent's JWT (its header says so), before any check. */
export function isAgentJwt(token: string): boolean {
  return token.startsWith("eyJ") && typeof readJwt(token, "agent+jwt") !== "string";
}

/**
 * Checks a JWT's signature by `jwk`, its `aud` (a string, or a list of one, that `audience`
 * accepts) and its times; answers its claims, or what failed. Its `jti` is checked for form
 * only: the caller spends it once everything else passed.
 */
export async function verifyJwt(
  token: string,
  typ: JwtType,
  jwk: JsonWebKey,
  audience: (aud: string) => boolean,
  now: number,
): Promise<
  | { ok: true; claims: JWTPayload & { jti: string; exp: number; aud: string } }
  | { ok: false; check: string }
> {
  let payload: JWTPayload;
  try {
    const key = await importJWK({ ...(jwk as JWK), alg: "EdDSA" }, "EdDSA");
    ({ payload } = await jwtVerify(token, key, {
      typ,
      algorithms: ALGORITHMS,
      currentDate: new Date(now),
      clockTolerance: CLOCK_SKEW_S,
      requiredClaims: ["iat", "exp", "jti", "aud"],
    }));
  } catch (error) {
    return { ok: false, check: describe(error) };
  }
  const aud = Array.isArray(payload.aud) && payload.aud.length === 1 ? payload.aud[0] : payload.aud;
  if (typeof aud !== "string" || !audience(aud)) {
    return { ok: false, check: "The JWT's aud is not this recipient" };
  }
  const { iat = 0, exp = 0, jti } = payload;
  if (iat * 1000 > now + CLOCK_SKEW_S * 1000)
    return { ok: false, check: "The JWT's iat is in the future" };
  if (exp - iat > MAX_LIFETIME_S) {
    return { ok: false, check: `The JWT lives longer than ${MAX_LIFETIME_S} seconds` };
  }
  if (typeof jti !== "string" || !JTI.test(jti)) {
    return { ok: false, check: "The JWT's jti must be 1 to 128 printable characters" };
  }
  return { ok: true, claims: { ...payload, jti, exp, aud } };
}

/**
 * An Ed25519 public key as a registration may send it, or why not: an `OKP` JWK on `Ed25519`
 * with its `x` and no private member, answered as exactly its public members.
 */
export function publicEd25519Key(value: unknown): JsonWebKey | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const jwk = value as Record<string, unknown>;
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519") return null;
  if (typeof jwk.x !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(jwk.x)) return null;
  if ("d" in jwk) return null;
  return { kty: "OKP", crv: "Ed25519", x: jwk.x };
}

/** A key's RFC 7638 thumbprint (SHA-256, base64url): a host's identifier, its JWTs' `iss`. */
export function thumbprintOf(jwk: JsonWebKey): Promise<string> {
  return calculateJwkThumbprint(jwk as JWK, "sha256");
}

function describe(error: unknown): string {
  const code = (error as { code?: string }).code;
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "The JWT has expired";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "The JWT's signature does not verify with the key";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return `The JWT's claims are invalid: ${(error as Error).message}`;
    default:
      return "The JWT is malformed or its key is not an Ed25519 key";
  }
}
