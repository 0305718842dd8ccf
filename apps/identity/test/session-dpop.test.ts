import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, type Engine, freePort, testEngines } from "@agentpass/db/testing";
import fc from "fast-check";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from "jose";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { partnerUsage } from "../src/domain/partner-usage.ts";
import { createPartner } from "../src/domain/partners.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { awaitRoomInRateWindow } from "../src/testing.ts";
import { startInstance } from "./support/instances.ts";

/**
 * AgentPass's own session tokens bound to an agent's key (RFC 9449, issue 53): minted with a
 * proof at POST /api/session-tokens and at the refresh grant, verified with the proof of the
 * request a partner received (POST /api/verify, introspection's extension), each proof once on
 * every instance. Two instances serve one database under one PUBLIC_URL, over real HTTP.
 */

const PARTNER_URL = "https://partner.example/api/notes";
/** The failure budget of each partner key here: small enough to spend in a test. */
const FAILED_VERIFIES_PER_MINUTE = 12;
const budget = { FAILED_VERIFIES_PER_MINUTE: String(FAILED_VERIFIES_PER_MINUTE) };

/** Two instances on one database: `a` at PUBLIC_URL's own address, `b` on a port of its own. */
async function startAgentPass(engine: Engine) {
  const database = await createTestDatabase(engine);
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const a = await startInstance(database, publicUrl, port, budget);
  const b = await startInstance(database, publicUrl, await freePort(), budget);
  const { ctx } = a.service;
  return {
    publicUrl,
    a,
    b,
    ctx,
    async account() {
      const created = await createAccount(ctx, `person-${randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      return created.account;
    },
    async userKey() {
      const account = await this.account();
      const issued = await issueKey(ctx, "user", account.id, "laptop");
      if (!issued.ok) throw new Error(issued.code);
      return { key: issued.key, email: account.email, accountId: account.id };
    },
    async partner() {
      const owner = await this.account();
      const created = await createPartner(ctx, { ownerAccountId: owner.id, name: "Notes" });
      if (!created.ok) throw new Error(created.reason);
      const issued = await issueKey(ctx, "partner", created.partner.id, "server");
      if (!issued.ok) throw new Error(issued.code);
      return { id: created.partner.id, key: issued.key, ownerId: owner.id };
    },
    /** GET `path` signed in to the dashboard as `accountId`: the page's HTML. */
    async page(path: string, accountId: string) {
      const session = await startWebSession(ctx, accountId);
      const response = await fetch(`${publicUrl}${path}`, {
        headers: { cookie: `agentpass_session=${session}` },
      });
      assert.equal(response.status, 200);
      return response.text();
    },
    async close() {
      await b.server.close();
      await a.server.close();
      await database.drop();
    },
  };
}

type AgentPass = Awaited<ReturnType<typeof startAgentPass>>;

/** An agent's ES256 key pair and its RFC 7638 thumbprint. */
async function agentKey() {
  const { publicKey, privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

type AgentKey = Awaited<ReturnType<typeof agentKey>>;

/** A proof made by hand, so that any claim can be made wrong. */
function proofOf(key: { privateKey: CryptoKey; jwk: JWK }, claims: Record<string, unknown>) {
  return new SignJWT({ jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: key.jwk })
    .sign(key.privateKey);
}

function athOf(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/** The proof an agent sends a partner with `token`, for `method` and `url`. */
function requestProof(key: AgentKey, token: string, method = "GET", url = PARTNER_URL) {
  return proofOf(key, { htm: method, htu: url, ath: athOf(token) });
}

async function answerOf(response: Response) {
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** POST /api/session-tokens at `url` with the user key, and a DPoP header when given. */
async function mint(url: string, userKey: string, proof?: string) {
  const response = await fetch(`${url}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}`, ...(proof !== undefined && { dpop: proof }) },
  });
  return answerOf(response);
}

/** A proof for minting at `as`: POST to PUBLIC_URL's /api/session-tokens. */
function mintProof(as: AgentPass, key: AgentKey) {
  return proofOf(key, { htm: "POST", htu: `${as.publicUrl}/api/session-tokens` });
}

/** A token bound to `key`, minted at /api/session-tokens. */
async function boundToken(as: AgentPass, userKey: string, key: AgentKey): Promise<string> {
  const minted = await mint(as.publicUrl, userKey, await mintProof(as, key));
  assert.equal(minted.status, 201, JSON.stringify(minted.body));
  return minted.body.sessionToken as string;
}

/** POST /api/verify at `url` with a raw body. */
async function verify(url: string, partnerKey: string, body: unknown) {
  const response = await fetch(`${url}/api/verify`, {
    method: "POST",
    headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return answerOf(response);
}

/** POST /oauth/introspect at `url` with the partner key and the form `fields`. */
async function introspect(url: string, partnerKey: string, fields: Record<string, string>) {
  const response = await fetch(`${url}/oauth/introspect`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${partnerKey}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams(fields).toString(),
  });
  return answerOf(response);
}

/** POST /oauth/token with a proof for it, retried once with the nonce the first answer gives. */
async function tokenWithProof(as: AgentPass, key: AgentKey, fields: Record<string, string>) {
  const htu = `${as.publicUrl}/oauth/token`;
  const send = async (nonce?: string) =>
    answerOf(
      await fetch(htu, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          dpop: await proofOf(key, { htm: "POST", htu, ...(nonce && { nonce }) }),
        },
        body: new URLSearchParams(fields).toString(),
      }),
    );
  const first = await send();
  assert.equal(first.body.error, "use_dpop_nonce");
  return send(first.headers.get("dpop-nonce") ?? "");
}

/** A device login of the CLI approved for a new account and redeemed with a proof by `key`. */
async function deviceLoginBoundTo(as: AgentPass, key: AgentKey): Promise<string> {
  const account = await as.account();
  const started = await answerOf(
    await fetch(`${as.publicUrl}/oauth/device_authorization`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: "agentpass-cli" }).toString(),
    }),
  );
  const userCode = started.body.user_code as string;
  assert.equal(await decideDeviceLogin(as.ctx, userCode, account.id, true), true);
  const redeemed = await tokenWithProof(as, key, {
    grant_type: "urn:ietf:params:oauth:grant-type:device_code",
    device_code: started.body.device_code as string,
    client_id: "agentpass-cli",
  });
  assert.equal(redeemed.status, 200, JSON.stringify(redeemed.body));
  assert.equal(redeemed.body.token_type, "DPoP");
  return redeemed.body.refresh_token as string;
}

/** A refusal of /api/verify's proof check, naming `check`. */
function proofInvalid(check: string) {
  return { error: `Invalid DPoP proof: ${check}`, code: "session_token_proof_invalid" };
}

const PROOF_REQUIRED = {
  error: "This session token is bound to a key: send its DPoP proof",
  code: "session_token_proof_required",
};

for (const engine of testEngines()) {
  describe(`session tokens bound to a DPoP key (${engine})`, () => {
    let as: AgentPass;
    before(async () => {
      as = await startAgentPass(engine);
    });
    after(async () => {
      await as.close();
    });

    describe("POST /api/session-tokens", () => {
      it("mints a token bound to the proof's key, and an unbound one without a proof, as before", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const key = await agentKey();
        const bound = await mint(as.publicUrl, user.key, await mintProof(as, key));
        assert.equal(bound.status, 201, JSON.stringify(bound.body));
        assert.deepEqual(Object.keys(bound.body).sort(), [
          "expiresAt",
          "sessionToken",
          "tokenType",
        ]);
        assert.equal(bound.body.tokenType, "DPoP");
        assert.equal(bound.headers.get("cache-control"), "no-store");
        const token = bound.body.sessionToken as string;
        const introspected = await introspect(as.publicUrl, partner.key, { token });
        assert.equal(introspected.body.active, true);
        assert.equal(introspected.body.token_type, "DPoP");
        assert.deepEqual(introspected.body.cnf, { jkt: key.jkt });

        const plain = await mint(as.publicUrl, user.key);
        assert.equal(plain.status, 201);
        assert.deepEqual(Object.keys(plain.body).sort(), ["expiresAt", "sessionToken"]);
        const unbound = await introspect(as.publicUrl, partner.key, {
          token: plain.body.sessionToken as string,
        });
        assert.equal(unbound.body.token_type, "Bearer");
        assert.equal(unbound.body.cnf, undefined);
      });

      it("takes htu from PUBLIC_URL, whichever instance or Host answers", async () => {
        const user = await as.userKey();
        const key = await agentKey();
        const atB = await mint(as.b.url, user.key, await mintProof(as, key));
        assert.equal(atB.status, 201, JSON.stringify(atB.body));
        const byHost = await mint(
          as.b.url,
          user.key,
          await proofOf(key, { htm: "POST", htu: `${as.b.url}/api/session-tokens` }),
        );
        assert.equal(byHost.status, 401);
        assert.deepEqual(byHost.body, {
          error: "Invalid DPoP proof: The DPoP proof's htu is not this URL",
          code: "dpop_proof_invalid",
        });
      });

      it("refuses a bad proof 401 dpop_proof_invalid, judged after the user key", async () => {
        const user = await as.userKey();
        const key = await agentKey();
        const stale = await proofOf(key, {
          htm: "POST",
          htu: `${as.publicUrl}/api/session-tokens`,
          iat: Math.floor(Date.now() / 1000) - 300,
        });
        const refused = await mint(as.publicUrl, user.key, stale);
        assert.equal(refused.status, 401);
        assert.deepEqual(refused.body, {
          error: "Invalid DPoP proof: The DPoP proof's iat is not within a minute of now",
          code: "dpop_proof_invalid",
        });
        const garbage = await mint(as.publicUrl, user.key, "not.a.proof");
        assert.equal(garbage.body.code, "dpop_proof_invalid");

        const unknownKey = await mint(as.publicUrl, `apu_${"x".repeat(32)}`, stale);
        assert.equal(unknownKey.status, 401);
        assert.equal(unknownKey.body.code, "user_key_invalid");
        const replayed = await mintProof(as, key);
        assert.equal((await mint(as.publicUrl, user.key, replayed)).status, 201);
        const again = await mint(as.publicUrl, user.key, replayed);
        assert.deepEqual(again.body, {
          error: "Invalid DPoP proof: The DPoP proof was used already (its jti)",
          code: "dpop_proof_invalid",
        });
      });

      it("mints with a DPoP device login's key only with a proof by that key", async () => {
        const key = await agentKey();
        const login = await deviceLoginBoundTo(as, key);
        const partner = await as.partner();
        const bound = await mint(as.publicUrl, login, await mintProof(as, key));
        assert.equal(bound.status, 201, JSON.stringify(bound.body));
        assert.equal(bound.body.tokenType, "DPoP");
        const introspected = await introspect(as.publicUrl, partner.key, {
          token: bound.body.sessionToken as string,
        });
        assert.deepEqual(introspected.body.cnf, { jkt: key.jkt });

        const thief = await mint(as.publicUrl, login, await mintProof(as, await agentKey()));
        assert.equal(thief.status, 401);
        assert.deepEqual(thief.body, {
          error: "Invalid DPoP proof: The DPoP proof is signed by another key than the login's",
          code: "dpop_proof_invalid",
        });
        const bearer = await mint(as.publicUrl, login);
        assert.equal(bearer.status, 401);
        assert.equal(bearer.body.code, "user_key_invalid");
      });
    });

    describe("POST /api/verify", () => {
      it("verifies a bound token with a proof of the partner's request, minted either way", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const verified = await verify(as.publicUrl, partner.key, {
          sessionToken: token,
          dpop: { proof: await requestProof(key, token), method: "GET", url: PARTNER_URL },
        });
        assert.equal(verified.status, 200, JSON.stringify(verified.body));
        assert.deepEqual(verified.body, { email: user.email });
        assert.equal(verified.headers.get("cache-control"), "no-store");

        // The refresh grant with a proof binds the same way; a query on the URL is ignored.
        const refreshed = await tokenWithProof(as, key, {
          grant_type: "refresh_token",
          refresh_token: user.key,
          client_id: "agentpass-cli",
        });
        assert.equal(refreshed.body.token_type, "DPoP");
        const accessToken = refreshed.body.access_token as string;
        const viaGrant = await verify(as.b.url, partner.key, {
          sessionToken: accessToken,
          dpop: {
            proof: await requestProof(key, accessToken, "POST"),
            method: "POST",
            url: `${PARTNER_URL}?page=2`,
          },
        });
        assert.equal(viaGrant.status, 200, JSON.stringify(viaGrant.body));
        assert.deepEqual(viaGrant.body, { email: user.email });
      });

      it("refuses a bound token without its proof: session_token_proof_required", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const token = await boundToken(as, user.key, await agentKey());
        const bare = await verify(as.publicUrl, partner.key, { sessionToken: token });
        assert.equal(bare.status, 401);
        assert.deepEqual(bare.body, PROOF_REQUIRED);
        assert.equal(bare.headers.get("www-authenticate"), "Bearer");
        const noHeader = await verify(as.publicUrl, partner.key, {
          sessionToken: token,
          dpop: { method: "GET", url: PARTNER_URL },
        });
        assert.deepEqual(noHeader.body, PROOF_REQUIRED);
      });

      it("refuses a proof that fails any check, naming the check", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const other = await boundToken(as, user.key, key);
        const ath = athOf(token);
        const cases: [string, Promise<string>, string, string][] = [
          [
            "another method",
            requestProof(key, token, "DELETE"),
            "GET",
            "The DPoP proof's htm is not this method",
          ],
          [
            "another URL",
            requestProof(key, token, "GET", "https://partner.example/api/admin"),
            "GET",
            "The DPoP proof's htu is not this URL",
          ],
          [
            "a stale iat",
            proofOf(key, {
              htm: "GET",
              htu: PARTNER_URL,
              ath,
              iat: Math.floor(Date.now() / 1000) - 300,
            }),
            "GET",
            "The DPoP proof's iat is not within a minute of now",
          ],
          [
            "another key",
            requestProof(await agentKey(), token),
            "GET",
            "The DPoP proof is signed by another key than the token's",
          ],
          [
            "the ath of another token",
            requestProof(key, other),
            "GET",
            "The DPoP proof's ath is not this access token's",
          ],
          [
            "no ath",
            proofOf(key, { htm: "GET", htu: PARTNER_URL }),
            "GET",
            "The DPoP proof's ath is not this access token's",
          ],
          [
            "a signature by another key than its jwk",
            (async () =>
              proofOf(
                { privateKey: (await agentKey()).privateKey, jwk: key.jwk },
                { htm: "GET", htu: PARTNER_URL, ath },
              ))(),
            "GET",
            "The DPoP proof's signature does not verify",
          ],
        ];
        for (const [name, proof, method, check] of cases) {
          const refused = await verify(as.publicUrl, partner.key, {
            sessionToken: token,
            dpop: { proof: await proof, method, url: PARTNER_URL },
          });
          assert.equal(refused.status, 401, name);
          assert.deepEqual(refused.body, proofInvalid(check), name);
        }
        const good = await verify(as.publicUrl, partner.key, {
          sessionToken: token,
          dpop: { proof: await requestProof(key, token), method: "GET", url: PARTNER_URL },
        });
        assert.equal(good.status, 200, "the token itself is still good");
      });

      it("spends a proof once, and only once every other check passed", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const elsewhere = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const proof = await requestProof(key, token);
        const dpop = { proof, method: "GET", url: PARTNER_URL };

        // Refused for the partner key, for the method told, for a token bound elsewhere: unspent.
        const badKey = await verify(as.publicUrl, `apk_${"x".repeat(32)}`, {
          sessionToken: token,
          dpop,
        });
        assert.equal(badKey.body.code, "partner_key_invalid");
        const badMethod = await verify(as.publicUrl, partner.key, {
          sessionToken: token,
          dpop: { ...dpop, method: "POST" },
        });
        assert.equal(badMethod.body.code, "session_token_proof_invalid");

        const first = await verify(as.a.url, partner.key, { sessionToken: token, dpop });
        assert.equal(first.status, 200, JSON.stringify(first.body));
        for (const partnerKey of [partner.key, elsewhere.key]) {
          const replayed = await verify(as.a.url, partnerKey, { sessionToken: token, dpop });
          assert.equal(replayed.status, 401);
          assert.deepEqual(
            replayed.body,
            proofInvalid("The DPoP proof was used already (its jti)"),
          );
        }
      });

      it("refuses at one instance a proof another instance on the same database accepted", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const elsewhere = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const dpop = { proof: await requestProof(key, token), method: "GET", url: PARTNER_URL };
        const first = await verify(as.a.url, partner.key, { sessionToken: token, dpop });
        assert.equal(first.status, 200, JSON.stringify(first.body));
        for (const partnerKey of [partner.key, elsewhere.key]) {
          const replayed = await verify(as.b.url, partnerKey, { sessionToken: token, dpop });
          assert.equal(replayed.status, 401);
          assert.deepEqual(
            replayed.body,
            proofInvalid("The DPoP proof was used already (its jti)"),
          );
        }
        const introspected = await introspect(as.b.url, partner.key, {
          token,
          dpop_method: "GET",
          dpop_url: PARTNER_URL,
          dpop_proof: dpop.proof,
        });
        assert.equal(introspected.body.dpop_error, "session_token_proof_invalid");
      });

      it("leaves an unbound token as it was, with or without dpop", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const minted = await mint(as.publicUrl, user.key);
        const token = minted.body.sessionToken as string;
        const plain = await verify(as.publicUrl, partner.key, { sessionToken: token });
        assert.equal(plain.status, 200);
        assert.deepEqual(plain.body, { email: user.email });
        const withDpop = await verify(as.publicUrl, partner.key, {
          sessionToken: token,
          dpop: { proof: "not.a.proof", method: "GET", url: PARTNER_URL },
        });
        assert.equal(withDpop.status, 200);
        assert.deepEqual(withDpop.body, { email: user.email });
      });

      it("answers a malformed dpop field 400 dpop_field_invalid, after sessionToken", async () => {
        const partner = await as.partner();
        const shapes: unknown[] = [
          null,
          "proof",
          42,
          [],
          {},
          { proof: "p", method: "GET" },
          { proof: "p", url: PARTNER_URL },
          { proof: 1, method: "GET", url: PARTNER_URL },
          { proof: "p", method: ["GET"], url: PARTNER_URL },
          { proof: "p", method: "", url: PARTNER_URL },
          { proof: "p", method: "GET", url: "/api/notes" },
          { proof: "p", method: "GET", url: "ftp://partner.example/notes" },
          { proof: "p", method: "GET", url: "javascript:alert(1)" },
          { proof: "p", method: "GET", url: 42 },
          { proof: "p".repeat(8193), method: "GET", url: PARTNER_URL },
          { proof: "p", method: "G".repeat(8193), url: PARTNER_URL },
          { proof: "p", method: "GET", url: `${PARTNER_URL}?${"q".repeat(8193)}` },
        ];
        for (const dpop of shapes) {
          const refused = await verify(as.publicUrl, partner.key, { sessionToken: "aps_x", dpop });
          assert.equal(refused.status, 400, JSON.stringify(dpop).slice(0, 80));
          assert.deepEqual(refused.body, {
            error: "Invalid dpop: expected {proof, method, url}",
            code: "dpop_field_invalid",
          });
        }
        const both = await verify(as.publicUrl, partner.key, { sessionToken: 42, dpop: 42 });
        assert.equal(both.body.code, "session_token_field_invalid");
      });

      it("answers any proof of a bound token with its refusal, never a 500", async () => {
        const user = await as.userKey();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const base64url = (value: unknown) =>
          Buffer.from(JSON.stringify(value)).toString("base64url");
        const proof = fc.oneof(
          fc.string({ unit: "binary", maxLength: 200 }),
          fc
            .tuple(fc.jsonValue(), fc.jsonValue(), fc.base64String())
            .map(
              ([header, claims, signature]) =>
                `${base64url(header)}.${base64url(claims)}.${signature}`,
            ),
          fc
            .record({
              alg: fc.constantFrom("ES256", "EdDSA", "none", "HS256"),
              jwk: fc.jsonValue(),
            })
            .map(
              (header) =>
                `${base64url({ typ: "dpop+jwt", ...header })}.${base64url({ htm: "GET" })}.`,
            ),
        );
        await fc.assert(
          fc.asyncProperty(
            proof,
            fc.constantFrom("GET", "get", "POST"),
            async (dpopProof, method) => {
              // A partner of its own each time: the refusals do not spend one failure budget.
              const partner = await as.partner();
              const refused = await verify(as.publicUrl, partner.key, {
                sessionToken: token,
                dpop: { proof: dpopProof, method, url: PARTNER_URL },
              });
              assert.equal(refused.status, 401, JSON.stringify(refused.body));
              assert.equal(refused.body.code, "session_token_proof_invalid");
              assert.match(String(refused.body.error), /^Invalid DPoP proof: The DPoP proof/);
            },
          ),
          { numRuns: 100 },
        );
      });

      it("counts proof refusals against the partner key's failure budget", async () => {
        await awaitRoomInRateWindow();
        const user = await as.userKey();
        const partner = await as.partner();
        const token = await boundToken(as, user.key, await agentKey());
        for (let i = 0; i < FAILED_VERIFIES_PER_MINUTE; i++) {
          const refused = await verify(as.publicUrl, partner.key, { sessionToken: token });
          assert.equal(refused.status, 401, `refusal ${i + 1}`);
        }
        const limited = await verify(as.publicUrl, partner.key, { sessionToken: token });
        assert.equal(limited.status, 429);
        assert.equal(limited.body.code, "rate_limited");
      });

      it("counts each refusal in the partner's usage by its reason", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const proof = await requestProof(key, token);
        const dpop = { proof, method: "GET", url: PARTNER_URL };
        const answers = [
          await verify(as.a.url, partner.key, { sessionToken: token, dpop }),
          await verify(as.a.url, partner.key, { sessionToken: token, dpop }),
          await verify(as.b.url, partner.key, { sessionToken: token }),
          await verify(as.b.url, partner.key, {
            sessionToken: token,
            dpop: { ...dpop, proof: await requestProof(key, token, "PUT") },
          }),
          await verify(as.a.url, partner.key, {
            sessionToken: token,
            dpop: { ...dpop, proof: await requestProof(await agentKey(), token) },
          }),
          await verify(as.a.url, partner.key, { sessionToken: "aps_forged", dpop }),
        ];
        assert.deepEqual(
          answers.map((answer) => answer.status),
          [200, 401, 401, 401, 401, 401],
        );
        await as.b.service.ctx.usage.flush();
        const usage = await partnerUsage(as.ctx, partner.id, 1);
        const counts = Object.fromEntries(usage.counts.map((row) => [row.outcome, row.count]));
        assert.deepEqual(counts, {
          success: 1,
          proof_replayed: 1,
          proof_required: 1,
          proof_invalid: 1,
          proof_wrong_key: 1,
          invalid_token: 1,
        });
        const page = await as.page(`/partners/${partner.id}`, partner.ownerId);
        for (const [outcome, label] of [
          ["proof_required", "Key-bound token without its DPoP proof"],
          ["proof_invalid", "Invalid DPoP proof"],
          ["proof_replayed", "Replayed DPoP proof"],
          ["proof_wrong_key", "DPoP proof signed by another key"],
        ]) {
          assert.ok(
            page.includes(`<tr data-outcome="${outcome}"><td>${label}</td><td>1</td></tr>`),
            outcome,
          );
        }
      });
    });

    describe("POST /oauth/introspect", () => {
      it("checks a bound token's proof when told the request, answering verify's code and message", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const key = await agentKey();
        const token = await boundToken(as, user.key, key);
        const request = { token, dpop_method: "GET", dpop_url: PARTNER_URL };
        const proof = await requestProof(key, token);

        const proven = await introspect(as.a.url, partner.key, { ...request, dpop_proof: proof });
        assert.equal(proven.body.active, true, JSON.stringify(proven.body));
        assert.deepEqual(proven.body.cnf, { jkt: key.jkt });
        assert.equal(proven.body.dpop_error, undefined);

        const replayed = await introspect(as.a.url, partner.key, { ...request, dpop_proof: proof });
        assert.equal(replayed.status, 200);
        assert.deepEqual(replayed.body, {
          active: false,
          dpop_error: "session_token_proof_invalid",
          dpop_error_description: "Invalid DPoP proof: The DPoP proof was used already (its jti)",
        });
        const missing = await introspect(as.a.url, partner.key, request);
        assert.deepEqual(missing.body, {
          active: false,
          dpop_error: "session_token_proof_required",
          dpop_error_description: PROOF_REQUIRED.error,
        });
        // Without the extension, the partner checks the proof itself against cnf.jkt.
        const standard = await introspect(as.a.url, partner.key, { token });
        assert.equal(standard.body.active, true);
        assert.equal(standard.body.token_type, "DPoP");
      });

      it("ignores the extension for an unbound token, and refuses dpop_method without dpop_url", async () => {
        const user = await as.userKey();
        const partner = await as.partner();
        const token = (await mint(as.publicUrl, user.key)).body.sessionToken as string;
        const unbound = await introspect(as.a.url, partner.key, {
          token,
          dpop_method: "GET",
          dpop_url: PARTNER_URL,
        });
        assert.equal(unbound.body.active, true);
        assert.equal(unbound.body.token_type, "Bearer");
        const halfTold = await introspect(as.a.url, partner.key, { token, dpop_method: "GET" });
        assert.equal(halfTold.status, 400);
        assert.equal(halfTold.body.error, "invalid_request");
        const badUrl = await introspect(as.a.url, partner.key, {
          token,
          dpop_method: "GET",
          dpop_url: "/api/notes",
        });
        assert.equal(badUrl.status, 400);
        assert.equal(badUrl.body.error, "invalid_request");
      });
    });
  });
}
