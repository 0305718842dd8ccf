import {
  base64url,
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  SignJWT,
} from "jose";

/**
 * DPoP (RFC 9449) for agents written in Node: a key pair the agent keeps, and the proof it signs
 * for every request, so that a session token bound to the key opens nothing without it. ES256
 * (P-256), the algorithm every AgentPass component makes keys with.
 */

/** An agent's DPoP key: it signs the proofs; its thumbprint is what bound tokens carry. */
export interface DpopKey {
  /** Signs proofs; extractable, so `exportJWK(key.privateKey)` (jose) can save it. */
  readonly privateKey: CryptoKey;
  /** The public half, as every proof carries it in its header. */
  readonly publicJwk: JWK;
  /** The key's RFC 7638 thumbprint: the `cnf.jkt` of the tokens bound to it. */
  readonly jkt: string;
}

/** The request a proof is made for. */
export interface DpopProofRequest {
  /** The request's method (`htm`, upper-cased). */
  method: string;
  /** The URL called (`htu`); its query and fragment are left out, as RFC 9449 says. */
  url: string;
  /** The token sent with the request: the proof then carries its hash (`ath`). */
  accessToken?: string;
  /** The server's `DPoP-Nonce`, where one is demanded (AgentPass's `/oauth/token`). */
  nonce?: string;
}

/**
 * A new ES256 key pair. Its private key is extractable so that an agent can keep it across runs;
 * keep it as secret as the login it goes with.
 *
 * @example
 * import { createDpopKey } from "@agentpass/verify/dpop";
 * const key = await createDpopKey();
 * console.log(key.jkt); // the thumbprint AgentPass binds the tokens to
 */
export async function createDpopKey(): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  return keyOf(privateKey, publicJwkOf(await exportJWK(publicKey)));
}

/**
 * A DPoP key from a saved private JWK (P-256), such as the `dpopKey` of a login the `agentpass`
 * CLI saved. Throws for a JWK that is not a P-256 private key (a `TypeError` for another type).
 *
 * @example
 * const key = await importDpopKey(JSON.parse(await readFile("dpop-key.json", "utf8")));
 */
export async function importDpopKey(privateJwk: JWK): Promise<DpopKey> {
  const jwk: JWK = typeof privateJwk === "object" && privateJwk !== null ? privateJwk : {};
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.d !== "string") {
    throw new TypeError(
      "@agentpass/verify/dpop: expected a P-256 private JWK (kty EC, crv P-256, d)",
    );
  }
  const privateKey = await importJWK({ ...jwk, alg: "ES256" }, "ES256", { extractable: true });
  return keyOf(privateKey as CryptoKey, publicJwkOf(jwk));
}

/**
 * A proof for one request: a fresh `jti` every time, since AgentPass accepts each proof once.
 *
 * @example
 * const proof = await dpopProof(key, { method: "GET", url: "https://notes.example/api/notes", accessToken: token });
 */
export async function dpopProof(key: DpopKey, request: DpopProofRequest): Promise<string> {
  const claims: Record<string, string> = {
    htm: request.method.toUpperCase(),
    htu: withoutQuery(request.url),
  };
  if (request.accessToken !== undefined) claims.ath = await tokenHash(request.accessToken);
  if (request.nonce !== undefined) claims.nonce = request.nonce;
  return new SignJWT(claims)
    .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk })
    .setJti(crypto.randomUUID())
    .setIssuedAt()
    .sign(key.privateKey);
}

/**
 * The two headers of a request made with a bound session token: the token under the DPoP scheme
 * and a proof for this method and URL.
 *
 * @example
 * import { dpopHeaders } from "@agentpass/verify/dpop";
 * const url = "https://notes.example/api/notes";
 * const response = await fetch(url, { headers: await dpopHeaders(key, token, "GET", url) });
 */
export async function dpopHeaders(
  key: DpopKey,
  token: string,
  method: string,
  url: string,
): Promise<{ Authorization: string; DPoP: string }> {
  const proof = await dpopProof(key, { method, url, accessToken: token });
  return { Authorization: `DPoP ${token}`, DPoP: proof };
}

async function keyOf(privateKey: CryptoKey, publicJwk: JWK): Promise<DpopKey> {
  return { privateKey, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, "sha256") };
}

/** The public members of a P-256 JWK: a proof's header must carry no private one. */
function publicJwkOf(jwk: JWK): JWK {
  return { kty: "EC", crv: "P-256", x: jwk.x as string, y: jwk.y as string };
}

/** `htu`: the URL without its query and fragment (RFC 9449 section 4.2). */
function withoutQuery(url: string): string {
  const parsed = new URL(url);
  parsed.search = "";
  parsed.hash = "";
  return parsed.href;
}

/** `ath`: base64url of the SHA-256 of the token's ASCII. */
async function tokenHash(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return base64url.encode(new Uint8Array(digest));
}
