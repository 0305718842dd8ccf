import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
  sign,
} from "node:crypto";

/**
 * A login's DPoP key (RFC 9449): it signs a proof for every request made with a session token
 * bound to it, so that a copied token opens nothing without the key. ES256 (P-256), as every
 * AgentPass component makes keys. Signed with `node:crypto` alone: the CLI has no dependency, so
 * it installs from AgentPass's own `/downloads/` with no registry (docs/decisions.md).
 */
export interface DpopKey {
  readonly privateKey: KeyObject;
  /** The public half, as every proof's header carries it. */
  readonly publicJwk: { kty: "EC"; crv: "P-256"; x: string; y: string };
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
export function createPrivateJwk(): JsonWebKey {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const { kty, crv, x, y, d } = privateKey.export({ format: "jwk" });
  return { kty, crv, x, y, d };
}

/** The saved private JWK as a key to sign with; null when it is not a P-256 private key. */
export function importDpopKey(privateJwk: unknown): DpopKey | null {
  const jwk = (
    typeof privateJwk === "object" && privateJwk !== null ? privateJwk : {}
  ) as JsonWebKey;
  const { x, y, d } = jwk;
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof x !== "string" || typeof y !== "string") {
    return null;
  }
  if (typeof d !== "string") return null;
  try {
    const privateKey = createPrivateKey({
      key: { kty: "EC", crv: "P-256", x, y, d },
      format: "jwk",
    });
    // RFC 7638: the required members in lexicographic order, no whitespace.
    const jkt = sha256(JSON.stringify({ crv: "P-256", kty: "EC", x, y }));
    // Only the public members: the proof's header is sent to every server the agent calls.
    return { privateKey, publicJwk: { kty: "EC", crv: "P-256", x, y }, jkt };
  } catch {
    return null;
  }
}

/**
 * A proof for one request (section 4.2): `htm` upper-cased, `htu` without query and fragment,
 * and a fresh `jti` each time, since a proof is accepted once.
 *
 * @example
 * const proof = dpopProof(key, { method: "GET", url, accessToken: token }, Date.now);
 * // headers: { Authorization: `DPoP ${token}`, DPoP: proof }
 */
export function dpopProof(key: DpopKey, request: ProofRequest, now: () => number): string {
  const url = new URL(request.url);
  url.search = "";
  url.hash = "";
  const claims: Record<string, string | number> = {
    htm: request.method.toUpperCase(),
    htu: url.href,
    jti: randomBytes(16).toString("base64url"),
    iat: Math.floor(now() / 1000),
  };
  if (request.accessToken !== undefined) claims.ath = sha256(request.accessToken);
  if (request.nonce !== undefined) claims.nonce = request.nonce;
  const header = { typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk };
  const signed = `${encodeJson(header)}.${encodeJson(claims)}`;
  // JWS ES256 (RFC 7518 section 3.4): the signature is R and S side by side, not DER.
  const signature = sign("sha256", Buffer.from(signed), {
    key: key.privateKey,
    dsaEncoding: "ieee-p1363",
  });
  return `${signed}.${signature.toString("base64url")}`;
}

export function encodeJson(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** base64url of the SHA-256 of a string's UTF-8 (`ath`, thumbprints). */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}
