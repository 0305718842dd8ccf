import { createHash, randomBytes } from "node:crypto";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  SignJWT,
} from "jose";

/**
 * A login's DPoP key (RFC 9449): it signs a proof for every request made with a session token
 * bound to it, so that a copied token opens nothing without the key. ES256 (P-256), as every
 * AgentPass component makes keys. This package depends on jose alone, not on @agentpass/verify.
 */
export interface DpopKey {
  readonly privateKey: CryptoKey;
  /** The public half, as every proof's header carries it. */
  readonly publicJwk: JWK;
  /** Its RFC 7638 thumbprint: the `cnf.jkt` of the tokens bound to it. */
  readonly jkt: string;
}

/** What a proof is for: one request, with the token it carries and the server's nonce. */
export interface ProofRequest {
  method: string;
  url: string;
  /** The token sent with the request: the proof then carries its hash (`ath`). */
  accessToken?: string;
  /** The `DPoP-Nonce` the server demanded (AgentPass's `/oauth/token` does). */
  nonce?: string;
}

/** A new key pair, as the private JWK a profile keeps (it holds the public members too). */
export async function createPrivateJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const { kty, crv, x, y, d } = await exportJWK(privateKey);
  return { kty, crv, x, y, d };
}

/** The saved private JWK as a key to sign with; null when it is not a P-256 private key. */
export async function importDpopKey(privateJwk: unknown): Promise<DpopKey | null> {
  const jwk = (typeof privateJwk === "object" && privateJwk !== null ? privateJwk : {}) as JWK;
  const members = [jwk.x, jwk.y, jwk.d];
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || members.some((m) => typeof m !== "string")) {
    return null;
  }
  try {
    const privateKey = (await importJWK({ ...jwk, alg: "ES256" }, "ES256")) as CryptoKey;
    // Only the public members: the proof's header is sent to every server the agent calls.
    const publicJwk: JWK = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y };
    return { privateKey, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, "sha256") };
  } catch {
    return null;
  }
}

/**
 * A proof for one request (section 4.2): `htm` upper-cased, `htu` without query and fragment,
 * and a fresh `jti` each time, since a proof is accepted once.
 *
 * @example
 * const proof = await dpopProof(key, { method: "GET", url, accessToken: token }, Date.now);
 * // headers: { Authorization: `DPoP ${token}`, DPoP: proof }
 */
export function dpopProof(key: DpopKey, request: ProofRequest, now: () => number): Promise<string> {
  const url = new URL(request.url);
  url.search = "";
  url.hash = "";
  const claims: Record<string, string> = { htm: request.method.toUpperCase(), htu: url.href };
  if (request.accessToken !== undefined) {
    claims.ath = createHash("sha256").update(request.accessToken).digest("base64url");
  }
  if (request.nonce !== undefined) claims.nonce = request.nonce;
  return new SignJWT(claims)
    .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk })
    .setJti(randomBytes(16).toString("base64url"))
    .setIssuedAt(Math.floor(now() / 1000))
    .sign(key.privateKey);
}
