import { createHash, createHmac, type KeyObject, timingSafeEqual } from "node:crypto";
import {
  calculateJwkThumbprint,
  decodeProtectedHeader,
  EmbeddedJWK,
  errors,
  type JWK,
  jwtVerify,
} from "jose";

/**
 * DPoP proofs (RFC 9449): a JWT the client signs with its own key for one request. A proof is
 * checked against the request it came with (`htm`, `htu`), the time (`iat`), the server's nonce
 * when one is demanded, and once only (`jti`); what it yields is the key's RFC 7638 thumbprint,
 * to which tokens are bound (`cnf.jkt`).
 */

/** Asymmetric algorithms only (section 4.3): a shared secret proves no possession. */
export const DPOP_ALGORITHMS = ["ES256", "EdDSA", "Ed25519", "ES384", "PS256", "RS256"] as const;

/** How far a proof's `iat` may be from now, either way (section 11.1: a short window). */
export const PROOF_WINDOW_MS = 60_000;
/** How long a nonce is good for: the step it was made in and the one after it. */
const NONCE_STEP_MS = 60_000;
const MAX_PROOF_CHARS = 4096;

export type ProofRefusal = "invalid_dpop_proof" | "use_dpop_nonce";

/**
 * What was wrong with a refused proof, as a partner's usage counts it: used before (a captured
 * proof replayed), signed by another key than the one its token or login is bound to (a thief's
 * own key), or any other fault.
 */
export type ProofFault = "replayed" | "wrong_key" | "invalid";

export type ProofCheck =
  | { ok: true; jkt: string; jti: string }
  | { ok: false; code: ProofRefusal; fault: ProofFault; description: string };

export interface ProofExpectation {
  /** The request's method, upper case. */
  method: string;
  /** The request's URL as the client addressed it, built from PUBLIC_URL, without query. */
  url: string;
  /** The current nonce key: a proof must carry a nonce this key made lately. */
  nonceKey?: KeyObject;
  /** The access token the proof must be bound to (`ath`), at a resource server. */
  accessToken?: string;
  now: number;
}

/**
 * Checks one proof's form, signature and claims. Its `jti` is not spent here: the caller spends
 * it in the shared store (`seenOnce`) once everything else passed, so a bad proof costs no write.
 */
export async function checkDpopProof(
  proof: string,
  expected: ProofExpectation,
): Promise<ProofCheck> {
  if (proof.length > MAX_PROOF_CHARS) return invalid("The DPoP proof is too long");
  if (hasPrivateMembers(proof)) {
    return invalid("The DPoP proof's jwk must be a public key without private members");
  }
  let verified: Awaited<ReturnType<typeof jwtVerify>>;
  try {
    verified = await jwtVerify(proof, EmbeddedJWK, {
      typ: "dpop+jwt",
      algorithms: [...DPOP_ALGORITHMS],
      currentDate: new Date(expected.now),
      // `iat` is checked below, against a window either way; `exp` is not a proof's claim.
      clockTolerance: 0,
    });
  } catch (error) {
    return invalid(proofErrorDescription(error));
  }
  const { payload, protectedHeader } = verified;
  // EmbeddedJWK imported it, as a public key (section 4.3 item 5).
  const jwk = protectedHeader.jwk as JWK;
  if (payload.htm !== expected.method) return invalid("The DPoP proof's htm is not this method");
  if (typeof payload.htu !== "string" || !sameUrl(payload.htu, expected.url)) {
    return invalid("The DPoP proof's htu is not this URL");
  }
  if (typeof payload.jti !== "string" || payload.jti.length < 16 || payload.jti.length > 256) {
    return invalid("The DPoP proof needs a jti of 16 to 256 characters");
  }
  if (
    typeof payload.iat !== "number" ||
    Math.abs(payload.iat * 1000 - expected.now) > PROOF_WINDOW_MS
  ) {
    return invalid("The DPoP proof's iat is not within a minute of now");
  }
  if (expected.accessToken !== undefined) {
    const ath = createHash("sha256").update(expected.accessToken).digest("base64url");
    if (payload.ath !== ath) return invalid("The DPoP proof's ath is not this access token's");
  }
  if (expected.nonceKey && !isCurrentNonce(expected.nonceKey, payload.nonce, expected.now)) {
    return {
      ok: false,
      code: "use_dpop_nonce",
      fault: "invalid",
      description: "Authorization server requires nonce in DPoP proof",
    };
  }
  return { ok: true, jkt: await calculateJwkThumbprint(jwk, "sha256"), jti: payload.jti };
}

/**
 * A nonce the server hands out in `DPoP-Nonce`: stateless, an HMAC over the current time step
 * under a key derived from the service's secret, so every instance makes and accepts the same
 * ones without storing any.
 */
export function currentDpopNonce(key: KeyObject, now: number): string {
  return nonceOf(key, Math.floor(now / NONCE_STEP_MS));
}

function nonceOf(key: KeyObject, step: number): string {
  const mac = createHmac("sha256", key).update(`dpop-nonce:${step}`).digest("base64url");
  return `${step.toString(36)}.${mac.slice(0, 22)}`;
}

/** A nonce of this step or the one before (constant-time: a nonce is not to be guessed). */
function isCurrentNonce(key: KeyObject, nonce: unknown, now: number): boolean {
  if (typeof nonce !== "string" || nonce.length > 64) return false;
  const step = Math.floor(now / NONCE_STEP_MS);
  return [step, step - 1].some((candidate) => {
    const expected = Buffer.from(nonceOf(key, candidate));
    const given = Buffer.from(nonce);
    return expected.length === given.length && timingSafeEqual(expected, given);
  });
}

/** A `jwk` with a private or symmetric member: a key that leaked itself, refused by name. */
function hasPrivateMembers(proof: string): boolean {
  try {
    const { jwk } = decodeProtectedHeader(proof);
    return jwk !== undefined && PRIVATE_MEMBERS.some((member) => member in jwk);
  } catch {
    return false; // malformed: jwtVerify says so
  }
}

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

/**
 * Section 4.3 item 9: `htu` compared without query and fragment, as URLs. The expected URL
 * loses its own too: a partner may tell the URL it was called at with its query.
 */
function sameUrl(htu: string, expected: string): boolean {
  try {
    return withoutQuery(htu) === withoutQuery(expected);
  } catch {
    return false;
  }
}

function withoutQuery(href: string): string {
  const url = new URL(href);
  url.search = "";
  url.hash = "";
  return url.href;
}

function proofErrorDescription(error: unknown): string {
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return `The DPoP proof's alg must be one of ${DPOP_ALGORITHMS.join(", ")}`;
  }
  if (error instanceof errors.JWTClaimValidationFailed && error.claim === "typ") {
    return 'The DPoP proof\'s typ must be "dpop+jwt"';
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "The DPoP proof's signature does not verify";
  }
  // jose's own words for a malformed header (no `jwk`, a bad one): never the sender's text.
  if (error instanceof errors.JWSInvalid) return `The DPoP proof is invalid: ${error.message}`;
  if (error instanceof errors.JOSEError) return `The DPoP proof is invalid (${error.code})`;
  return "The DPoP proof is malformed";
}

function invalid(description: string, fault: ProofFault = "invalid"): ProofCheck {
  return { ok: false, code: "invalid_dpop_proof", fault, description };
}

/** Checks proofs and spends their `jti` in the store every instance shares. */
export interface DpopVerifier {
  /**
   * A proof for `method` and `url` (built from PUBLIC_URL, or told by a partner), with a current
   * nonce of this service when `requireNonce`, bound to `accessToken` (`ath`) when given and
   * signed by the key `boundTo` names when given: its key's thumbprint, or why not.
   */
  verify(
    proof: string,
    request: {
      method: string;
      url: string;
      requireNonce: boolean;
      accessToken?: string;
      boundTo?: BoundKey;
    },
  ): Promise<ProofCheck>;
  /** The nonce to hand out now, in `DPoP-Nonce`. */
  nonce(): string;
}

/** The key a proof must be signed by, and what is bound to it (named when another key signed). */
interface BoundKey {
  /** Its RFC 7638 thumbprint. */
  jkt: string;
  holder: "token" | "login";
}

export function createDpopVerifier(options: {
  seen: { seenOnce(key: string, ttlMs: number): Promise<boolean> };
  nonceKey: KeyObject;
  clock: () => number;
}): DpopVerifier {
  const { seen, nonceKey, clock } = options;
  return {
    async verify(proof, request) {
      const now = clock();
      const checked = await checkDpopProof(proof, {
        method: request.method,
        url: request.url,
        now,
        ...(request.requireNonce && { nonceKey }),
        ...(request.accessToken !== undefined && { accessToken: request.accessToken }),
      });
      if (!checked.ok) return checked;
      if (request.boundTo && checked.jkt !== request.boundTo.jkt) {
        const { holder } = request.boundTo;
        return invalid(`The DPoP proof is signed by another key than the ${holder}'s`, "wrong_key");
      }
      // Checked last, so that only a proof that passed everything else costs a write.
      // Section 11.1: once per key, on every instance, for as long as its iat is acceptable.
      const first = await seen.seenOnce(`dpop:${checked.jkt}:${checked.jti}`, 2 * PROOF_WINDOW_MS);
      return first ? checked : invalid("The DPoP proof was used already (its jti)", "replayed");
    },
    nonce: () => currentDpopNonce(nonceKey, clock()),
  };
}
