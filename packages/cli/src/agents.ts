import {
  createPrivateKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
  randomBytes,
  sign,
} from "node:crypto";
import { hostname } from "node:os";
import { serviceUrl } from "./device-login.ts";
import { encodeJson, sha256 } from "./dpop-key.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import { printable } from "./terminal-text.ts";

/**
 * The Agent Auth Protocol's client side (v1.0-draft): the login's host key (one per saved
 * login, its machine's identity to AgentPass) registers agents, each with a key of its own, and
 * signs the short-lived JWTs that say so. Ed25519 keys and EdDSA signatures with `node:crypto`
 * alone: the CLI has no dependency (docs/decisions.md). Private keys stay in credentials.json.
 */

/** An Ed25519 key as a saved private JWK, ready to sign, with its RFC 7638 thumbprint. */
export interface Ed25519Key {
  readonly privateKey: KeyObject;
  readonly publicJwk: { kty: "OKP"; crv: "Ed25519"; x: string };
  readonly thumbprint: string;
}

/** A new Ed25519 key pair, as the private JWK a profile keeps. */
export function createEd25519Jwk(): JsonWebKey {
  const { privateKey } = generateKeyPairSync("ed25519");
  const { kty, crv, x, d } = privateKey.export({ format: "jwk" });
  return { kty, crv, x, d };
}

/** A saved private JWK as a key to sign with; null when it is not an Ed25519 private key. */
export function importEd25519Key(privateJwk: unknown): Ed25519Key | null {
  const jwk = (
    typeof privateJwk === "object" && privateJwk !== null ? privateJwk : {}
  ) as JsonWebKey;
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") return null;
  if (typeof jwk.d !== "string") return null;
  try {
    const privateKey = createPrivateKey({
      key: { kty: "OKP", crv: "Ed25519", x: jwk.x, d: jwk.d },
      format: "jwk",
    });
    // RFC 7638: the required members in lexicographic order, no whitespace.
    const thumbprint = sha256(JSON.stringify({ crv: "Ed25519", kty: "OKP", x: jwk.x }));
    return { privateKey, publicJwk: { kty: "OKP", crv: "Ed25519", x: jwk.x }, thumbprint };
  } catch {
    return null;
  }
}

/** A JWT of `typ` signed with `key` (EdDSA), living 60 seconds, with a fresh `jti`. */
export function signJwt(
  key: Ed25519Key,
  typ: "host+jwt" | "agent+jwt",
  claims: Record<string, unknown>,
  now: () => number,
): string {
  const iat = Math.floor(now() / 1000);
  const payload = { ...claims, iat, exp: iat + 60, jti: randomBytes(16).toString("base64url") };
  const signed = `${encodeJson({ typ, alg: "EdDSA" })}.${encodeJson(payload)}`;
  const signature = sign(null, Buffer.from(signed), key.privateKey);
  return `${signed}.${signature.toString("base64url")}`;
}

/** A host's JWT for `issuer` (section 4.2), carrying the host's key and extra claims. */
export function hostJwt(
  host: Ed25519Key,
  issuer: string,
  now: () => number,
  extra: Record<string, unknown> = {},
): string {
  return signJwt(
    host,
    "host+jwt",
    { iss: host.thumbprint, aud: issuer, host_public_key: host.publicJwk, ...extra },
    now,
  );
}

/** An agent's JWT (section 4.3): `iss` its host's thumbprint, `sub` its id, for `audience`. */
export function agentJwt(
  agent: Ed25519Key,
  hostThumbprint: string,
  agentId: string,
  audience: string,
  now: () => number,
): string {
  return signJwt(agent, "agent+jwt", { iss: hostThumbprint, sub: agentId, aud: audience }, now);
}

/** The provider's configuration: its issuer (every JWT's `aud`) and absolute endpoint URLs. */
export interface AgentAuthConfiguration {
  issuer: string;
  endpoints: { register: string; status: string; revoke: string };
}

/**
 * Reads `/.well-known/agent-configuration` of the saved server. Its issuer and endpoints must be
 * on the server's own origin: an impostor answer cannot send keys or codes anywhere else.
 */
export async function discover(url: string): Promise<AgentAuthConfiguration> {
  const answer = await request(`${url}/.well-known/agent-configuration`, {});
  const { issuer, endpoints } = answer.body as {
    issuer?: unknown;
    endpoints?: Record<string, unknown>;
  };
  const register = serviceUrl(url, endpoints?.register);
  const status = serviceUrl(url, endpoints?.status);
  const revoke = serviceUrl(url, endpoints?.revoke);
  if (answer.status !== 200 || typeof issuer !== "string" || !serviceUrl(url, issuer)) {
    throw new CliError(EXIT.ERROR, `AgentPass at ${url} does not speak the Agent Auth Protocol`);
  }
  if (!register || !status || !revoke) {
    throw new CliError(EXIT.ERROR, `AgentPass at ${url} published no agent endpoints`);
  }
  return { issuer, endpoints: { register, status, revoke } };
}

export interface AgentAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** One JSON request to an Agent Auth endpoint; unreachable → a CliError. */
export async function request(
  url: string,
  options: { bearer?: string; json?: unknown },
): Promise<AgentAnswer> {
  try {
    const response = await fetch(url, {
      method: options.json === undefined ? "GET" : "POST",
      headers: {
        ...(options.bearer && { authorization: `Bearer ${options.bearer}` }),
        ...(options.json !== undefined && { "content-type": "application/json" }),
      },
      ...(options.json !== undefined && { body: JSON.stringify(options.json) }),
      signal: AbortSignal.timeout(10_000),
    });
    const body: unknown = await response.json().catch(() => ({}));
    return {
      status: response.status,
      body: typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {},
    };
  } catch {
    throw new CliError(EXIT.UNREACHABLE, `Cannot reach AgentPass at ${new URL(url).origin}`);
  }
}

/** Why an Agent Auth endpoint refused, for the person: its message, else its code. */
export function agentReason(answer: AgentAnswer): string {
  const { error, message } = answer.body;
  const text = typeof message === "string" ? message : error;
  return typeof text === "string" ? printable(text, 200) : `HTTP ${answer.status}`;
}

/** What the host calls itself: this machine, as the approval page shows it. */
export function hostName(): string {
  return `agentpass CLI on ${hostname()}`.slice(0, 100);
}
