import { randomUUID } from "node:crypto";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from "jose";

/**
 * An Agent Auth Protocol client made of `jose` alone, as an outside implementation would be:
 * Ed25519 keys, `host+jwt` and `agent+jwt` signed by hand so that any claim can be made wrong.
 */

export interface Ed25519Key {
  privateKey: CryptoKey;
  jwk: JWK;
  thumbprint: string;
}

export async function ed25519Key(): Promise<Ed25519Key> {
  const { publicKey, privateKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, thumbprint: await calculateJwkThumbprint(jwk) };
}

/** The clock JWTs are signed by: real time, unless a test sets its service's clock here. */
export const signingClock = { now: () => Date.now() };
const now = () => Math.floor(signingClock.now() / 1000);

/** A host's JWT for `issuer`, carrying its key (and an agent's, for a registration). */
export function hostJwt(
  host: Ed25519Key,
  issuer: string,
  extra: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({
    host_public_key: host.jwk,
    jti: randomUUID(),
    ...extra,
  })
    .setProtectedHeader({ alg: "EdDSA", typ: "host+jwt", ...header })
    .setIssuer(host.thumbprint)
    .setAudience(issuer)
    .setIssuedAt(now())
    .setExpirationTime(now() + 60)
    .sign(host.privateKey);
}

/** An agent's JWT: `iss` its host's thumbprint (section 4.3), `sub` its id, for `audience`. */
export function agentJwt(
  agent: Ed25519Key,
  hostThumbprint: string,
  agentId: string,
  audience: string,
  extra: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  return new SignJWT({ jti: randomUUID(), ...extra })
    .setProtectedHeader({ alg: "EdDSA", typ: "agent+jwt", ...header })
    .setIssuer(hostThumbprint)
    .setSubject(agentId)
    .setAudience(audience)
    .setIssuedAt(now())
    .setExpirationTime(now() + 60)
    .sign(agent.privateKey);
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A JSON request with a bearer token, answered as status, headers and parsed body. */
export async function call(
  url: string,
  options: { method?: string; bearer?: string; body?: unknown } = {},
): Promise<Answer> {
  const response = await fetch(url, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers: {
      ...(options.bearer !== undefined && { authorization: `Bearer ${options.bearer}` }),
      ...(options.body !== undefined && { "content-type": "application/json" }),
    },
    ...(options.body !== undefined && {
      body: typeof options.body === "string" ? options.body : JSON.stringify(options.body),
    }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}
