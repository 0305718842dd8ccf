/**
 * DPoP (RFC 9449) for agents written in Node: a key pair the agent keeps, and the proof it signs
 * for every request, so that a session token bound to the key opens nothing without it. ES256
 * (P-256), the algorithm every AgentPass component makes keys with. Signed with Web Crypto,
 * which every runtime the library serves has: the package has no dependency, so it installs from
 * AgentPass's own `/downloads/` with no registry (docs/decisions.md); the tests check every proof
 * with jose.
 */

/** A P-256 public JWK, as a proof's header carries it. */
export interface PublicJwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
}

/** A P-256 private JWK, as `agentpass` saves a login's key. */
export interface PrivateJwk {
  kty?: string;
  crv?: string;
  x?: string;
  y?: string;
  d?: string;
}

/**
 * A Web Crypto `CryptoKey`, named by the members the library needs, so that a project without
 * the DOM library's types (Node's own) reads these declarations too.
 */
export interface SigningKey {
  readonly type: string;
  readonly extractable: boolean;
}

/** An agent's DPoP key: it signs the proofs; its thumbprint is what bound tokens carry. */
export interface DpopKey {
  /** Signs proofs; `crypto.subtle.exportKey("jwk", key.privateKey)` saves it for `importDpopKey`. */
  readonly privateKey: SigningKey;
  /** The public half, as every proof carries it in its header. */
  readonly publicJwk: PublicJwk;
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
 * A new ES256 key pair. Its private key can be exported so that an agent can keep it across
 * runs; keep it as secret as the login it goes with.
 *
 * @example
 * import { createDpopKey } from "@agentpass/verify/dpop";
 * const key = await createDpopKey();
 * console.log(key.jkt); // the thumbprint AgentPass binds the tokens to
 */
export async function createDpopKey(): Promise<DpopKey> {
  const { privateKey } = await crypto.subtle.generateKey(ES256, true, ["sign"]);
  return keyOf(privateKey, await crypto.subtle.exportKey("jwk", privateKey));
}

/**
 * A DPoP key from a saved private JWK (P-256), such as the `dpopKey` of a login the `agentpass`
 * CLI saved. Throws a `TypeError` for a JWK that is not a P-256 private key.
 *
 * @example
 * const key = await importDpopKey(JSON.parse(await readFile("dpop-key.json", "utf8")));
 */
export async function importDpopKey(privateJwk: PrivateJwk): Promise<DpopKey> {
  const jwk: PrivateJwk = typeof privateJwk === "object" && privateJwk !== null ? privateJwk : {};
  const members = [jwk.x, jwk.y, jwk.d];
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || members.some((m) => typeof m !== "string")) {
    throw new TypeError(NOT_A_P256_KEY);
  }
  const saved: PrivateJwk = { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, d: jwk.d };
  let privateKey: CryptoKey;
  try {
    privateKey = await crypto.subtle.importKey("jwk", saved as JsonWebKey, ES256, true, ["sign"]);
  } catch {
    throw new TypeError(NOT_A_P256_KEY);
  }
  return keyOf(privateKey, saved);
}

const ES256 = { name: "ECDSA", namedCurve: "P-256" } as const;

const NOT_A_P256_KEY =
  "@agentpass/verify/dpop: expected a P-256 private JWK (kty EC, crv P-256, d)";

/**
 * A proof for one request: a fresh `jti` every time, since AgentPass accepts each proof once.
 *
 * @example
 * const proof = await dpopProof(key, { method: "GET", url: "https://notes.example/api/notes", accessToken: token });
 */
export async function dpopProof(key: DpopKey, request: DpopProofRequest): Promise<string> {
  const claims: Record<string, string | number> = {
    htm: request.method.toUpperCase(),
    htu: withoutQuery(request.url),
    jti: crypto.randomUUID(),
    iat: Math.floor(Date.now() / 1000),
  };
  if (request.accessToken !== undefined) claims.ath = await sha256(request.accessToken);
  if (request.nonce !== undefined) claims.nonce = request.nonce;
  const header = { typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk };
  const signed = `${encodeJson(header)}.${encodeJson(claims)}`;
  // Web Crypto's ECDSA signature is R and S side by side, as JWS ES256 wants (RFC 7518 3.4).
  const signature = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    key.privateKey as CryptoKey,
    TEXT.encode(signed),
  );
  return `${signed}.${base64url(new Uint8Array(signature))}`;
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

async function keyOf(privateKey: CryptoKey, jwk: PrivateJwk): Promise<DpopKey> {
  const publicJwk: PublicJwk = { kty: "EC", crv: "P-256", x: jwk.x as string, y: jwk.y as string };
  // RFC 7638: the required members in lexicographic order, no whitespace.
  const members = JSON.stringify({ crv: "P-256", kty: "EC", x: publicJwk.x, y: publicJwk.y });
  return { privateKey, publicJwk, jkt: await sha256(members) };
}

/** `htu`: the URL without its query and fragment (RFC 9449 section 4.2). */
function withoutQuery(url: string): string {
  const parsed = new URL(url);
  parsed.search = "";
  parsed.hash = "";
  return parsed.href;
}

const TEXT = new TextEncoder();

function encodeJson(value: object): string {
  return base64url(TEXT.encode(JSON.stringify(value)));
}

/** base64url of the SHA-256 of a string's UTF-8 (`ath`, thumbprints). */
async function sha256(text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", TEXT.encode(text))));
}

/** RFC 4648 section 5, unpadded: `btoa` is in every runtime, `Buffer` only in Node. */
function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}
