import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, type Engine, freePort, testEngines } from "@agentpass/db/testing";
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  type JWK,
  SignJWT,
} from "jose";
import * as client from "openid-client";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { createPartner } from "../src/domain/partners.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { startInstance } from "./support/instances.ts";
import { webClient } from "./support/web-client.ts";

/**
 * RFC 9449 at the token endpoint, with a stock client (openid-client's DPoP handle) and with
 * proofs made by hand where a stock client would never send them.
 */

async function startIssuer(engine: Engine) {
  const database = await createTestDatabase(engine);
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const first = await startInstance(database, issuer, port);
  const { ctx } = first.service;
  const others: Awaited<ReturnType<typeof startInstance>>[] = [];
  return {
    issuer,
    ctx,
    /** Another instance on the same database and PUBLIC_URL, on a port of its own. */
    async secondInstance() {
      const started = await startInstance(database, issuer, await freePort());
      others.push(started);
      return started.url;
    },
    async account() {
      const created = await createAccount(ctx, `person-${crypto.randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      return created.account;
    },
    async partnerKey() {
      const owner = await this.account();
      const created = await createPartner(ctx, { ownerAccountId: owner.id, name: "Notes" });
      if (!created.ok) throw new Error(created.reason);
      const issued = await issueKey(ctx, "partner", created.partner.id, "server");
      if (!issued.ok) throw new Error(issued.code);
      return issued.key;
    },
    async browser() {
      const account = await this.account();
      const token = await startWebSession(ctx, account.id);
      const browser = webClient({ request: (path, init) => fetch(path, init) }, issuer);
      browser.jar.set("agentpass_session", token);
      return browser;
    },
    async introspect(partnerKey: string, token: string) {
      const response = await fetch(`${issuer}/oauth/introspect`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${partnerKey}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ token }).toString(),
      });
      return (await response.json()) as Record<string, unknown>;
    },
    async close() {
      for (const other of others) {
        await other.server.close();
      }
      await first.server.close();
      await database.drop();
    },
  };
}

type Issuer = Awaited<ReturnType<typeof startIssuer>>;

const insecure = { execute: [client.allowInsecureRequests], algorithm: "oauth2" as const };

async function discover(as: Issuer, clientId = "agentpass-cli") {
  return client.discovery(new URL(as.issuer), clientId, undefined, client.None(), insecure);
}

/** A device login approved for a new account, redeemed with `dpop` (or as Bearer). */
async function deviceLogin(as: Issuer, config: client.Configuration, dpop?: client.DPoPHandle) {
  const account = await as.account();
  const started = await client.initiateDeviceAuthorization(config, {});
  assert.equal(await decideDeviceLogin(as.ctx, started.user_code, account.id, true), true);
  const tokens = await client.pollDeviceAuthorizationGrant(
    config,
    { ...started, interval: 0 },
    undefined,
    dpop && { DPoP: dpop },
  );
  return { tokens, account };
}

/** A key pair and its RFC 7638 thumbprint, made apart from any client library. */
async function keyPair(alg = "ES256") {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { publicKey, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

/** A proof made by hand: every field can be made wrong. */
async function handProof(
  key: { privateKey: CryptoKey; jwk: JWK },
  claims: Record<string, unknown>,
  header: { alg?: string; typ?: string; jwk?: JWK } = {},
) {
  return new SignJWT({ jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: key.jwk, ...header })
    .sign(key.privateKey);
}

async function tokenRequest(url: string, fields: Record<string, string>, proof?: string) {
  const response = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(proof && { dpop: proof }),
    },
    body: new URLSearchParams(fields).toString(),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** The nonce the token endpoint hands out now (any proof without one is answered with it). */
async function currentNonce(as: Issuer): Promise<string> {
  const key = await keyPair();
  const asked = await tokenRequest(
    as.issuer,
    { grant_type: "refresh_token", refresh_token: "apu_x", client_id: "agentpass-cli" },
    await handProof(key, { htm: "POST", htu: `${as.issuer}/oauth/token` }),
  );
  assert.equal(asked.body.error, "use_dpop_nonce");
  return asked.headers.get("dpop-nonce") ?? "";
}

for (const engine of testEngines()) {
  describe(`DPoP at the authorization server (RFC 9449, ${engine})`, () => {
    let as: Issuer;
    before(async () => {
      as = await startIssuer(engine);
    });
    after(async () => {
      await as.close();
    });

    it("advertises its proof algorithms in the metadata", async () => {
      const metadata = (await discover(as)).serverMetadata();
      const algorithms = metadata.dpop_signing_alg_values_supported ?? [];
      assert.ok(algorithms.includes("ES256") && algorithms.includes("EdDSA"), String(algorithms));
      assert.ok(!algorithms.some((alg) => alg.startsWith("HS") || alg === "none"));
    });

    it("binds a device login to the client's key: DPoP tokens, cnf.jkt, refreshes with that key only", async () => {
      const partnerKey = await as.partnerKey();
      const config = await discover(as);
      const pair = await client.randomDPoPKeyPair("ES256");
      const dpop = client.getDPoPHandle(config, pair);
      const jkt = await calculateJwkThumbprint(await exportJWK(pair.publicKey));
      // The first proof carries no nonce: openid-client retries once with the one it is given.
      const { tokens, account } = await deviceLogin(as, config, dpop);
      assert.equal(tokens.token_type, "dpop");
      assert.match(tokens.access_token, /^aps_/);
      const introspected = await as.introspect(partnerKey, tokens.access_token);
      assert.equal(introspected.active, true);
      assert.equal(introspected.email, account.email);
      assert.equal(introspected.token_type, "DPoP");
      assert.deepEqual(introspected.cnf, { jkt });

      const refreshed = await client.refreshTokenGrant(
        config,
        tokens.refresh_token as string,
        undefined,
        { DPoP: dpop },
      );
      assert.equal(refreshed.token_type, "dpop");
      assert.deepEqual((await as.introspect(partnerKey, refreshed.access_token)).cnf, { jkt });

      // Another key, or none: invalid_grant, and the refresh token still works with its key.
      const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair("ES256"));
      await assert.rejects(
        client.refreshTokenGrant(config, tokens.refresh_token as string, undefined, {
          DPoP: thief,
        }),
        (error: client.ResponseBodyError) => error.error === "invalid_grant",
      );
      const bearer = await tokenRequest(as.issuer, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token as string,
        client_id: "agentpass-cli",
      });
      assert.equal(bearer.status, 400);
      assert.equal(bearer.body.error, "invalid_grant");
      const again = await client.refreshTokenGrant(
        config,
        tokens.refresh_token as string,
        undefined,
        { DPoP: dpop },
      );
      assert.equal(again.token_type, "dpop");

      // Nor does the bound user key mint a bearer token at the API.
      const minted = await fetch(`${as.issuer}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${tokens.refresh_token}` },
      });
      assert.equal(minted.status, 401);
    });

    it("binds a code by dpop_jkt and a browser flow's rotating refresh token to the key", async () => {
      const partnerKey = await as.partnerKey();
      const redirectUri = "http://127.0.0.1:9/callback";
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: [redirectUri],
          client_name: "DPoP agent",
          token_endpoint_auth_method: "none",
        },
        client.None(),
        insecure,
      );
      const pair = await client.randomDPoPKeyPair("EdDSA");
      const dpop = client.getDPoPHandle(config, pair);
      const jkt = await calculateJwkThumbprint(await exportJWK(pair.publicKey));
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        dpop_jkt: jkt,
      });
      const browser = await as.browser();
      const page = await (await browser.get(url.pathname + url.search)).text();
      const query =
        /name="request" value="([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&") ?? "";
      const approved = await browser.post("/oauth/authorize", {
        request: query,
        decision: "approve",
      });
      const callback = new URL(approved.headers.get("location") ?? "");

      // The code is bound to the key dpop_jkt named: a proof by another key does not redeem it.
      const other = client.getDPoPHandle(config, await client.randomDPoPKeyPair("ES256"));
      await assert.rejects(
        client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier }, undefined, {
          DPoP: other,
        }),
        (error: client.ResponseBodyError) => error.error === "invalid_grant",
      );
      const consent = await browser.get(url.pathname + url.search);
      const again =
        /name="request" value="([^"]+)"/
          .exec(await consent.text())?.[1]
          ?.replaceAll("&amp;", "&") ?? "";
      const second = await browser.post("/oauth/authorize", {
        request: again,
        decision: "approve",
      });
      const tokens = await client.authorizationCodeGrant(
        config,
        new URL(second.headers.get("location") ?? ""),
        { pkceCodeVerifier: verifier },
        undefined,
        { DPoP: dpop },
      );
      assert.equal(tokens.token_type, "dpop");
      assert.match(tokens.refresh_token ?? "", /^apr_/);
      assert.deepEqual((await as.introspect(partnerKey, tokens.access_token)).cnf, { jkt });

      const stolen = await tokenRequest(as.issuer, {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token as string,
        client_id: config.clientMetadata().client_id,
      });
      assert.equal(stolen.body.error, "invalid_grant", "a bound refresh token without its key");
      const refreshed = await client.refreshTokenGrant(
        config,
        tokens.refresh_token as string,
        undefined,
        { DPoP: dpop },
      );
      assert.equal(refreshed.token_type, "dpop");
      assert.notEqual(refreshed.refresh_token, tokens.refresh_token, "it still rotates");
      assert.deepEqual((await as.introspect(partnerKey, refreshed.access_token)).cnf, { jkt });
    });

    it("keeps a client without a proof on Bearer tokens, unless it registered dpop_bound_access_tokens", async () => {
      const partnerKey = await as.partnerKey();
      const config = await discover(as);
      const { tokens } = await deviceLogin(as, config);
      assert.equal(tokens.token_type, "bearer");
      const introspected = await as.introspect(partnerKey, tokens.access_token);
      assert.equal(introspected.token_type, "Bearer");
      assert.equal(introspected.cnf, undefined);

      const registered = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: ["http://127.0.0.1:9/callback"],
          token_endpoint_auth_method: "none",
          dpop_bound_access_tokens: true,
        },
        client.None(),
        insecure,
      );
      await assert.rejects(
        deviceLogin(as, registered),
        (error: client.ResponseBodyError) => error.error === "invalid_dpop_proof",
      );
      const pair = await client.randomDPoPKeyPair("ES256");
      const bound = await deviceLogin(as, registered, client.getDPoPHandle(registered, pair));
      assert.equal(bound.tokens.token_type, "dpop");
    });

    it("refuses bad proofs with invalid_dpop_proof, and answers no-store with a nonce", async () => {
      const key = await keyPair();
      const nonce = await currentNonce(as);
      const htu = `${as.issuer}/oauth/token`;
      const fields = {
        grant_type: "refresh_token",
        refresh_token: "apu_x",
        client_id: "agentpass-cli",
      };
      const hmacKey = new TextEncoder().encode("s".repeat(32));
      const cases: [string, Promise<string>][] = [
        ["another URL", handProof(key, { htm: "POST", htu: `${as.issuer}/oauth/other`, nonce })],
        ["another method", handProof(key, { htm: "GET", htu, nonce })],
        [
          "a stale iat",
          handProof(key, { htm: "POST", htu, nonce, iat: Math.floor(Date.now() / 1000) - 300 }),
        ],
        ["another typ", handProof(key, { htm: "POST", htu, nonce }, { typ: "JWT" })],
        [
          "a symmetric alg",
          new SignJWT({
            htm: "POST",
            htu,
            nonce,
            jti: crypto.randomUUID(),
            iat: Math.floor(Date.now() / 1000),
          })
            .setProtectedHeader({
              alg: "HS256",
              typ: "dpop+jwt",
              jwk: { kty: "oct" },
            })
            .sign(hmacKey),
        ],
        [
          "a private key in its header",
          (async () => {
            const jwk = await exportJWK(key.privateKey);
            return handProof(key, { htm: "POST", htu, nonce }, { jwk });
          })(),
        ],
        [
          "a signature by another key",
          (async () =>
            handProof({ ...key, jwk: (await keyPair()).jwk }, { htm: "POST", htu, nonce }))(),
        ],
      ];
      const said = [/htu/, /htm/, /iat/, /typ/, /alg/, /private/, /signature/];
      for (const [index, [name, proof]] of cases.entries()) {
        const answer = await tokenRequest(as.issuer, fields, await proof);
        assert.equal(answer.status, 400, name);
        assert.equal(
          answer.body.error,
          "invalid_dpop_proof",
          `${name}: ${answer.body.error_description}`,
        );
        assert.equal(answer.headers.get("cache-control"), "no-store", name);
        assert.match(String(answer.body.error_description), said[index] as RegExp, name);
      }
      const stale = await tokenRequest(
        as.issuer,
        fields,
        await handProof(key, { htm: "POST", htu, nonce: "1.notanonce" }),
      );
      assert.equal(stale.body.error, "use_dpop_nonce");
      assert.ok(stale.headers.get("dpop-nonce"));
      assert.equal(stale.headers.get("cache-control"), "no-store");
    });

    it("refuses a proof's jti a second time, on another instance too", async () => {
      const config = await discover(as);
      const pair = await client.randomDPoPKeyPair("ES256");
      const { tokens } = await deviceLogin(as, config, client.getDPoPHandle(config, pair));
      const key = {
        privateKey: pair.privateKey,
        jwk: await exportJWK(pair.publicKey),
      };
      const proof = await handProof(key, {
        htm: "POST",
        htu: `${as.issuer}/oauth/token`,
        nonce: await currentNonce(as),
      });
      const fields = {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token as string,
        client_id: "agentpass-cli",
      };
      const first = await tokenRequest(as.issuer, fields, proof);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.token_type, "DPoP");
      assert.equal(first.headers.get("cache-control"), "no-store");
      // An SQLite file serves one process; on PostgreSQL a second instance shares the store.
      const elsewhere = engine === "postgres" ? await as.secondInstance() : as.issuer;
      const replayed = await tokenRequest(elsewhere, fields, proof);
      assert.equal(replayed.status, 400);
      assert.equal(replayed.body.error, "invalid_dpop_proof");
      assert.match(String(replayed.body.error_description), /used already/);
    });
  });
}
