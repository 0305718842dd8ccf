import { createHash } from "node:crypto";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";

/** An agent's DPoP key (RFC 9449), made as the CLI makes one: ES256, with jose. */
export interface BenchDpopKey {
  privateKey: CryptoKey;
  jwk: JWK;
}

/** The request a proof is for: its method and URL, and the token it goes with (`ath`). */
interface ProvenRequest {
  method: string;
  url: string;
  accessToken?: string;
}

/**
 * How many proofs are signed at once: jose signs through WebCrypto, whose jobs run on libuv's
 * threads, so a batch keeps every core signing.
 */
const SIGNING_BATCH = 256;

export async function createBenchDpopKey(): Promise<BenchDpopKey> {
  const { publicKey, privateKey } = await generateKeyPair("ES256");
  return { privateKey, jwk: await exportJWK(publicKey) };
}

/** A proof by `key` for one request, with a `jti` of its own and the time it was signed. */
export function dpopProof(key: BenchDpopKey, request: ProvenRequest): Promise<string> {
  const ath =
    request.accessToken === undefined
      ? undefined
      : createHash("sha256").update(request.accessToken).digest("base64url");
  return new SignJWT({
    jti: crypto.randomUUID(),
    htm: request.method,
    htu: request.url,
    iat: Math.floor(Date.now() / 1000),
    ...(ath && { ath }),
  })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: key.jwk })
    .sign(key.privateKey);
}

/**
 * `count` proofs for the same request, each accepted once: signed before a scenario is timed, so
 * the load generator's signing is not measured as the service's time.
 */
export async function dpopProofs(
  key: BenchDpopKey,
  request: ProvenRequest,
  count: number,
): Promise<string[]> {
  const proofs: string[] = [];
  while (proofs.length < count) {
    const batch = Math.min(SIGNING_BATCH, count - proofs.length);
    proofs.push(
      ...(await Promise.all(Array.from({ length: batch }, () => dpopProof(key, request)))),
    );
  }
  return proofs;
}
