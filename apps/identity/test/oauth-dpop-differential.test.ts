import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { after, before, describe, it } from "node:test";
import { type Engine, freePort, testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import Provider, { type AdapterFactory, type AdapterPayload } from "oidc-provider";
import { DPOP_ALGORITHMS } from "../src/infra/dpop-proofs.ts";
import { openTestIdentity } from "./support/harness.ts";

/**
 * node-oidc-provider 9 as a differential reference for RFC 9449: the same bad proofs go to its
 * token endpoint and to ours, and each must be refused with the same `error` by both. Both demand
 * a nonce, and each proof carries the one its server handed out, so the nonce is never what
 * differs. Where the two differ by design, the test says so and asserts both answers.
 */

/**
 * A token endpoint with a grant the proof can be sent with, so that a good proof is answered 200
 * and a bad one is refused for the proof: `form` is a working token request without its proof.
 */
interface TokenEndpoint {
  url: string;
  form: Record<string, string>;
  headers: Record<string, string>;
  close(): Promise<void>;
}

/** Ours, with a user key as the refresh token (the agent's grant, contract item a). */
async function startAgentPass(engine: Engine): Promise<TokenEndpoint> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const identity = await openTestIdentity(engine, { PUBLIC_URL: issuer }, { realClock: true });
  const server = await startServer(identity.service, { port, host: "127.0.0.1" });
  const userKey = await identity.userKey();
  return {
    url: `${issuer}/oauth/token`,
    form: { grant_type: "refresh_token", refresh_token: userKey.key, client_id: "agentpass-cli" },
    headers: {},
    async close() {
      await server.close();
      await identity.database.drop();
    },
  };
}

/** node-oidc-provider's stateful models in a Map: only the replay cache and tokens are used. */
function memoryAdapter(): AdapterFactory {
  const rows = new Map<string, AdapterPayload>();
  return (model) => ({
    upsert: async (id, payload) => {
      rows.set(`${model}:${id}`, payload);
    },
    find: async (id) => rows.get(`${model}:${id}`),
    findByUserCode: async () => undefined,
    findByUid: async () => undefined,
    consume: async (id) => {
      const row = rows.get(`${model}:${id}`);
      if (row) row.consumed = Math.floor(Date.now() / 1000);
    },
    destroy: async (id) => {
      rows.delete(`${model}:${id}`);
    },
    revokeByGrantId: async () => {},
  });
}

/**
 * node-oidc-provider with DPoP as ours is set: the same algorithms, a nonce always demanded. The
 * grant is client_credentials, the simplest it proves a proof with (client authentication is
 * judged first, and passes).
 */
async function startReference(): Promise<TokenEndpoint> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const secret = randomBytes(32).toString("base64url");
  const provider = new Provider(issuer, {
    adapter: memoryAdapter(),
    jwks: { keys: [{ ...(await exportJWK(privateKey)), alg: "ES256", use: "sig" }] },
    clients: [
      {
        client_id: "differential",
        client_secret: secret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        // Its default is RS256; the one signing key here is ES256 (no ID token is made).
        id_token_signed_response_alg: "ES256",
      },
    ],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
    },
    ttl: { ClientCredentials: 60 },
    // A browser client of any origin, as our public token endpoint lets one in.
    clientBasedCORS: () => true,
    enabledJWA: { dPoPSigningAlgValues: [...DPOP_ALGORITHMS] },
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((listening) => server.listen(port, "127.0.0.1", listening));
  return {
    url: `${issuer}/token`,
    form: { grant_type: "client_credentials" },
    headers: {
      authorization: `Basic ${Buffer.from(`differential:${secret}`).toString("base64")}`,
    },
    close: () =>
      new Promise<void>((closed) => {
        server.close(() => closed());
        server.closeAllConnections();
      }),
  };
}

interface Answer {
  status: number;
  error: string | undefined;
  description: string | undefined;
  nonce: string | null;
}

async function sendProof(endpoint: TokenEndpoint, proof: string | null): Promise<Answer> {
  const response = await fetch(endpoint.url, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...endpoint.headers,
      ...(proof !== null && { dpop: proof }),
    },
    body: new URLSearchParams(endpoint.form).toString(),
  });
  const body = (await response.json()) as { error?: string; error_description?: string };
  return {
    status: response.status,
    error: body.error,
    description: body.error_description,
    nonce: response.headers.get("dpop-nonce"),
  };
}

type Key = { privateKey: CryptoKey; jwk: JWK };

async function keyPair(): Promise<Key> {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  return { privateKey, jwk: await exportJWK(publicKey) };
}

const now = () => Math.floor(Date.now() / 1000);

/** What one bad proof is made of: claims and header over a good proof's, for one endpoint. */
interface Tampering {
  claims?: (good: Record<string, unknown>) => Record<string, unknown>;
  header?: (good: Record<string, unknown>) => Record<string, unknown>;
  /** Rewrites the signed proof as it goes on the wire. */
  wire?: (proof: string) => Promise<string> | string;
}

/** A proof for `endpoint` with its server's `nonce`, as a DPoP client makes it, then tampered. */
async function proofFor(
  endpoint: TokenEndpoint,
  key: Key,
  nonce: string | undefined,
  tampering: Tampering = {},
): Promise<string> {
  const good = { jti: crypto.randomUUID(), htm: "POST", htu: endpoint.url, iat: now(), nonce };
  const claims = tampering.claims ? tampering.claims(good) : good;
  const header = { typ: "dpop+jwt", jwk: key.jwk };
  const tampered = tampering.header ? tampering.header(header) : header;
  // The key signs ES256: a proof with another alg is made on the wire.
  const proof = await new SignJWT(claims)
    .setProtectedHeader({ ...tampered, alg: "ES256" })
    .sign(key.privateKey);
  return tampering.wire ? tampering.wire(proof) : proof;
}

const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString("base64url");

/** A proof's header and claims, decoded, to be signed again otherwise. */
function partsOf(proof: string) {
  const [header = "", claims = ""] = proof
    .split(".")
    .slice(0, 2)
    .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
  return { header: header as Record<string, unknown>, claims: claims as Record<string, unknown> };
}

/** A JWT with `alg: none` and no signature, its header and claims otherwise those of `proof`. */
function unsigned(proof: string): string {
  const { header, claims } = partsOf(proof);
  return `${encode({ ...header, alg: "none" })}.${encode(claims)}.`;
}

/**
 * The same claims signed with HMAC, the header naming the public key (the confusion of an
 * asymmetric key with a shared secret), or carrying the secret itself as an `oct` key.
 */
function hmacSigned(secretInHeader: boolean) {
  return (proof: string): Promise<string> => {
    const { header, claims } = partsOf(proof);
    const secret = randomBytes(32);
    const jwk = secretInHeader ? { kty: "oct", k: secret.toString("base64url") } : header.jwk;
    return new SignJWT(claims)
      .setProtectedHeader({ ...header, alg: "HS256", jwk: jwk as JWK })
      .sign(secret);
  };
}

/** The proof with the signature another key makes over other bytes. */
async function resigned(proof: string): Promise<string> {
  const other = await keyPair();
  const { claims } = partsOf(proof);
  const forged = await new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: other.jwk })
    .sign(other.privateKey);
  return `${proof.slice(0, proof.lastIndexOf("."))}.${forged.split(".")[2]}`;
}

/**
 * The bad proofs both servers must refuse alike, and what ours says of each (theirs says less),
 * so that each is seen refused for the check it was made to fail.
 */
function badProofs(privateJwk: JWK): [string, Tampering, RegExp][] {
  return [
    ["an htu of another URL", { claims: (good) => ({ ...good, htu: `${good.htu}/other` }) }, /htu/],
    ["an htm of another method", { claims: (good) => ({ ...good, htm: "GET" }) }, /htm/],
    ["an htm in lower case", { claims: (good) => ({ ...good, htm: "post" }) }, /htm/],
    ["no jti", { claims: ({ jti: _jti, ...good }) => good }, /jti/],
    ["no iat", { claims: ({ iat: _iat, ...good }) => good }, /iat/],
    ["no typ", { header: ({ typ: _typ, ...good }) => good }, /typ/],
    ["another typ", { header: (good) => ({ ...good, typ: "JWT" }) }, /typ/],
    ["no jwk", { header: ({ jwk: _jwk, ...good }) => good }, /jwk|ERR_JWS_INVALID/],
    ["alg none", { wire: unsigned }, /alg/],
    ["HS256 over the public key", { wire: hmacSigned(false) }, /alg/],
    ["HS256 with its secret in the header", { wire: hmacSigned(true) }, /private/],
    [
      "a private key in the header jwk",
      { header: (good) => ({ ...good, jwk: privateJwk }) },
      /private/,
    ],
    ["a signature by another key than the header's", { wire: resigned }, /signature/],
    ["two proofs in one header", { wire: (proof) => `${proof}, ${proof}` }, /one DPoP header/],
  ];
}

for (const engine of testEngines()) {
  describe(`DPoP proofs judged like node-oidc-provider 9 (${engine})`, () => {
    let ours: TokenEndpoint;
    let reference: TokenEndpoint;
    let key: Key;
    before(async () => {
      [ours, reference, key] = await Promise.all([
        startAgentPass(engine),
        startReference(),
        keyPair(),
      ]);
    });
    after(async () => {
      await Promise.all([ours.close(), reference.close()]);
    });

    /** Each server's current nonce, learnt as a client learns it: from a proof without one. */
    async function nonces() {
      const learnt = await Promise.all(
        [ours, reference].map(async (endpoint) => {
          const answer = await sendProof(endpoint, await proofFor(endpoint, key, undefined));
          assert.equal(answer.status, 400);
          assert.equal(answer.error, "use_dpop_nonce", answer.description);
          assert.ok(answer.nonce, "a DPoP-Nonce header");
          return answer.nonce;
        }),
      );
      return { ours: learnt[0] ?? "", reference: learnt[1] ?? "" };
    }

    it("both demand a nonce first, and take a good proof that carries it", async () => {
      const nonce = await nonces();
      const withNonce = await sendProof(ours, await proofFor(ours, key, nonce.ours));
      const theirs = await sendProof(reference, await proofFor(reference, key, nonce.reference));
      assert.equal(withNonce.status, 200, withNonce.description);
      assert.equal(theirs.status, 200, theirs.description);
    });

    it("both refuse a nonce they did not make with use_dpop_nonce, and say the next one", async () => {
      for (const endpoint of [ours, reference]) {
        const answer = await sendProof(endpoint, await proofFor(endpoint, key, "1.notanonce"));
        assert.equal(answer.status, 400);
        assert.equal(answer.error, "use_dpop_nonce", endpoint.url);
        assert.ok(answer.nonce, endpoint.url);
      }
    });

    it("both take an htu with a query and a fragment: they are not compared (section 4.3)", async () => {
      const nonce = await nonces();
      const withQuery = {
        claims: (good: Record<string, unknown>) => ({ ...good, htu: `${good.htu}?a=1#b` }),
      };
      const answers = await Promise.all([
        sendProof(ours, await proofFor(ours, key, nonce.ours, withQuery)),
        sendProof(reference, await proofFor(reference, key, nonce.reference, withQuery)),
      ]);
      assert.deepEqual(
        answers.map((answer) => answer.status),
        [200, 200],
        JSON.stringify(answers),
      );
    });

    it("refuses each bad proof with the same error as node-oidc-provider", async () => {
      const nonce = await nonces();
      const privateJwk = await exportJWK(key.privateKey);
      for (const [name, tampering, said] of badProofs(privateJwk)) {
        const [answer, expected] = await Promise.all([
          sendProof(ours, await proofFor(ours, key, nonce.ours, tampering)),
          sendProof(reference, await proofFor(reference, key, nonce.reference, tampering)),
        ]);
        assert.equal(
          expected.error,
          "invalid_dpop_proof",
          `reference, ${name}: ${expected.description}`,
        );
        assert.equal(answer.error, expected.error, `${name}: ${answer.description}`);
        assert.equal(answer.status, expected.status, name);
        assert.match(String(answer.description), said, name);
      }
    });

    it("refuses a replayed proof: ours with invalid_dpop_proof (RFC 9449 section 5), theirs with invalid_grant", async () => {
      const nonce = await nonces();
      const [proof, theirs] = await Promise.all([
        proofFor(ours, key, nonce.ours),
        proofFor(reference, key, nonce.reference),
      ]);
      assert.equal((await sendProof(ours, proof)).status, 200);
      assert.equal((await sendProof(reference, theirs)).status, 200);
      const [replayed, expected] = await Promise.all([
        sendProof(ours, proof),
        sendProof(reference, theirs),
      ]);
      // node-oidc-provider spends the jti with the grant and answers its grant error; the RFC
      // says a proof that fails a check is invalid_dpop_proof, which a client can act on.
      assert.equal(expected.error, "invalid_grant", expected.description);
      assert.equal(replayed.error, "invalid_dpop_proof", replayed.description);
      assert.match(String(replayed.description), /used already/);
    });

    it("refuses a stale iat even with a current nonce, where node-oidc-provider lets the nonce vouch", async () => {
      const nonce = await nonces();
      const stale = { claims: (good: Record<string, unknown>) => ({ ...good, iat: now() - 300 }) };
      const [answer, expected] = await Promise.all([
        sendProof(ours, await proofFor(ours, key, nonce.ours, stale)),
        sendProof(reference, await proofFor(reference, key, nonce.reference, stale)),
      ]);
      // Section 4.3 step 11: the creation time is the iat's or the nonce's. node-oidc-provider
      // takes the nonce's when there is one; ours checks both, since the resource servers demand
      // no nonce: a token got with a clock a minute off would be refused at its first use.
      assert.equal(expected.status, 200, expected.description);
      assert.equal(answer.error, "invalid_dpop_proof", answer.description);
      assert.match(String(answer.description), /iat/);
    });

    it("lets a browser client send its proof and read the nonce (CORS), as node-oidc-provider does", async () => {
      const origin = "https://agent.example";
      for (const endpoint of [reference, ours]) {
        const preflight = await fetch(endpoint.url, {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type, dpop",
          },
        });
        const allowed = preflight.headers.get("access-control-allow-headers") ?? "";
        assert.match(allowed, /\bdpop\b/i, `${endpoint.url} allows: ${allowed}`);
        const response = await fetch(endpoint.url, {
          method: "POST",
          headers: {
            origin,
            "content-type": "application/x-www-form-urlencoded",
            ...endpoint.headers,
            dpop: await proofFor(endpoint, key, undefined),
          },
          body: new URLSearchParams(endpoint.form).toString(),
        });
        assert.ok(response.headers.get("dpop-nonce"), endpoint.url);
        const exposed = response.headers.get("access-control-expose-headers") ?? "";
        assert.match(exposed, /\bdpop-nonce\b/i, `${endpoint.url} exposes: ${exposed}`);
      }
    });

    it("refuses a jti shorter than 96 random bits base64url-encoded, which node-oidc-provider takes", async () => {
      const nonce = await nonces();
      const short = {
        claims: (good: Record<string, unknown>) => ({ ...good, jti: "a".repeat(15) }),
      };
      const [answer, expected] = await Promise.all([
        sendProof(ours, await proofFor(ours, key, nonce.ours, short)),
        sendProof(reference, await proofFor(reference, key, nonce.reference, short)),
      ]);
      // Section 4.2: a jti of at least 96 bits of pseudorandom data, or a UUID. Theirs asks only
      // for a string; ours refuses what cannot hold that much, so that a client whose jti could
      // repeat learns it at once rather than by a refusal as a replay now and then.
      assert.equal(expected.status, 200, expected.description);
      assert.equal(answer.error, "invalid_dpop_proof", answer.description);
      assert.match(String(answer.description), /jti/);
    });
  });
}
