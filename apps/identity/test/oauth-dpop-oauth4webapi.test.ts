import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, it } from "node:test";
import { type Engine, freePort, testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import { calculateJwkThumbprint, exportJWK } from "jose";
import * as oauth from "oauth4webapi";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { openTestIdentity } from "./support/harness.ts";
import { webClient } from "./support/web-client.ts";

/**
 * RFC 9449 at the authorization server with a second stock client, oauth4webapi (panva's
 * low-level one, under openid-client's handle in oauth-dpop.test.ts): every step is its own call
 * here, the nonce retry included, so each is seen to hold on its own.
 */

/** The service on a real port, its PUBLIC_URL the address oauth4webapi calls. */
async function startIssuer(engine: Engine) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const identity = await openTestIdentity(engine, { PUBLIC_URL: issuer }, { realClock: true });
  const server = await startServer(identity.service, { port, host: "127.0.0.1" });
  return {
    identity,
    issuer,
    /** A browser signed in as a new account, to give consent as a person does. */
    async browser() {
      const account = await identity.account();
      const browser = webClient({ request: (path, init) => fetch(path, init) }, issuer);
      browser.jar.set("agentpass_session", await startWebSession(identity.ctx, account.id));
      return browser;
    },
    async close() {
      await server.close();
      await identity.database.drop();
    },
  };
}

type Issuer = Awaited<ReturnType<typeof startIssuer>>;

/** The CLI's public client: device logins, and user keys presented as refresh tokens. */
const agent: oauth.Client = { client_id: "agentpass-cli" };

/** Plain http on loopback: oauth4webapi asks for it by name on every call. */
const insecure = { [oauth.allowInsecureRequests]: true } as const;

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  const response = await oauth.discoveryRequest(url, { algorithm: "oauth2", ...insecure });
  return oauth.processDiscoveryResponse(url, response);
}

/**
 * A token request made and processed, sent once more when the answer is `use_dpop_nonce`:
 * oauth4webapi's own retry, the handle having kept the nonce the refusal carried.
 */
async function withNonceRetry(
  attempt: () => Promise<oauth.TokenEndpointResponse>,
): Promise<oauth.TokenEndpointResponse> {
  try {
    return await attempt();
  } catch (error) {
    if (!oauth.isDPoPNonceError(error)) throw error;
    return attempt();
  }
}

/** A refresh token grant with `dpop`'s proof, retried once for a nonce. */
function refreshWith(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  refreshToken: string,
  dpop: oauth.DPoPHandle,
): Promise<oauth.TokenEndpointResponse> {
  return withNonceRetry(async () =>
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, {
        DPoP: dpop,
        ...insecure,
      }),
    ),
  );
}

/** The OAuth error a rejected token request carried (oauth4webapi's ResponseBodyError). */
async function refusalOf(request: Promise<unknown>): Promise<string> {
  const error = await request.then(
    () => assert.fail("expected a refusal"),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof oauth.ResponseBodyError, String(error));
  return error.error;
}

/** An ES256 key pair as oauth4webapi makes them, its handle, and the key's RFC 7638 thumbprint. */
async function dpopKey(client: oauth.Client) {
  const pair = await oauth.generateKeyPair("ES256", { extractable: true });
  const jkt = await calculateJwkThumbprint(await exportJWK(pair.publicKey));
  return { handle: oauth.DPoP(client, pair), jkt };
}

/** Introspection as a partner does, its key as the password of HTTP Basic. */
async function introspect(
  as: oauth.AuthorizationServer,
  partnerKey: string,
  token: string,
): Promise<oauth.IntrospectionResponse> {
  const partner = { client_id: "notes" };
  const auth = oauth.ClientSecretBasic(partnerKey);
  const response = await oauth.introspectionRequest(as, partner, auth, token, insecure);
  return oauth.processIntrospectionResponse(as, partner, response);
}

/**
 * A partner's API on a port of its own: it hands each request's token, and its proof with the
 * method and URL it was called at, to POST /api/verify (what the partner libraries do), and
 * answers with what AgentPass said.
 */
async function startPartner(issuer: string, partnerKey: string) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/api/notes`;
  const server = createServer(async (request, response) => {
    const [scheme, token] = (request.headers.authorization ?? "").split(" ");
    const proof = request.headers.dpop;
    const dpop = scheme === "DPoP" && { proof, method: request.method, url };
    const verified = await fetch(`${issuer}/api/verify`, {
      method: "POST",
      headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
      body: JSON.stringify({ sessionToken: token, ...(dpop && { dpop }) }),
    });
    response.writeHead(verified.status, { "content-type": "application/json" });
    response.end(await verified.text());
  });
  await new Promise<void>((listening) => server.listen(port, "127.0.0.1", listening));
  return {
    url,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}

for (const engine of testEngines()) {
  describe(`oauth4webapi with DPoP against the authorization server (${engine})`, () => {
    let issuer: Issuer;
    let as: oauth.AuthorizationServer;
    before(async () => {
      issuer = await startIssuer(engine);
      as = await discover(issuer.issuer);
    });
    after(async () => {
      await issuer.close();
    });

    /** An agent's user key (a new one) presented as a refresh token with `dpop`'s proof. */
    async function mintBound(dpop: oauth.DPoPHandle) {
      return refreshWith(as, agent, (await issuer.identity.userKey()).key, dpop);
    }

    it("discovers the token endpoint and the proof algorithms from the issuer URL", () => {
      assert.equal(as.token_endpoint, `${issuer.issuer}/oauth/token`);
      assert.ok(as.dpop_signing_alg_values_supported?.includes("ES256"));
    });

    it("binds a device login to the key: nonce retry, refresh, cnf.jkt, another key refused", async () => {
      const { handle, jkt } = await dpopKey(agent);
      const started = await oauth.processDeviceAuthorizationResponse(
        as,
        agent,
        await oauth.deviceAuthorizationRequest(as, agent, oauth.None(), {}, insecure),
      );
      const account = await issuer.identity.account();
      assert.equal(
        await decideDeviceLogin(issuer.identity.ctx, started.user_code, account.id, true),
        true,
      );

      const poll = async () =>
        oauth.processDeviceCodeResponse(
          as,
          agent,
          await oauth.deviceCodeGrantRequest(as, agent, oauth.None(), started.device_code, {
            DPoP: handle,
            ...insecure,
          }),
        );
      // The handle holds no nonce yet: the first answer is use_dpop_nonce, and only that.
      assert.equal(await refusalOf(poll()), "use_dpop_nonce");
      const tokens = await poll();
      assert.equal(tokens.token_type, "dpop");
      assert.match(tokens.access_token, /^aps_/);
      const refreshToken = tokens.refresh_token ?? "";
      assert.match(refreshToken, /^apu_/);

      const partner = await issuer.identity.partner();
      const introspected = await introspect(as, partner.key, tokens.access_token);
      assert.equal(introspected.active, true);
      assert.equal(introspected.email, account.email);
      assert.equal(introspected.token_type, "DPoP");
      assert.equal(introspected.cnf?.jkt, jkt);
      assert.equal(introspected.cnf?.jkt, await handle.calculateThumbprint());

      const refresh = (dpop: oauth.DPoPHandle) => refreshWith(as, agent, refreshToken, dpop);
      const refreshed = await refresh(handle);
      assert.equal(refreshed.token_type, "dpop");
      assert.notEqual(refreshed.access_token, tokens.access_token);
      assert.equal((await introspect(as, partner.key, refreshed.access_token)).cnf?.jkt, jkt);

      const thief = await dpopKey(agent);
      assert.equal(await refusalOf(refresh(thief.handle)), "invalid_grant");
      // The login is as it was: its key still refreshes, bound to the same key.
      const again = await refresh(handle);
      assert.equal(again.token_type, "dpop");
      assert.equal((await introspect(as, partner.key, again.access_token)).cnf?.jkt, jkt);
    });

    it("runs the code flow with PKCE and dpop_jkt, its rotating refresh token bound to the key", async () => {
      const redirectUri = "http://127.0.0.1:9/callback";
      const registered = await fetch(`${issuer.issuer}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          redirect_uris: [redirectUri],
          client_name: "oauth4webapi agent",
          token_endpoint_auth_method: "none",
        }),
      });
      assert.equal(registered.status, 201);
      const client: oauth.Client = {
        client_id: ((await registered.json()) as { client_id: string }).client_id,
      };
      const { handle, jkt } = await dpopKey(client);
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const authorize = new URL(as.authorization_endpoint ?? "");
      authorize.search = new URLSearchParams({
        response_type: "code",
        client_id: client.client_id,
        redirect_uri: redirectUri,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
        dpop_jkt: await handle.calculateThumbprint(),
      }).toString();

      const browser = await issuer.browser();
      const consent = await (await browser.get(authorize.pathname + authorize.search)).text();
      const request = /name="request" value="([^"]+)"/.exec(consent)?.[1]?.replaceAll("&amp;", "&");
      assert.ok(request, "the consent page");
      const approved = await browser.post("/oauth/authorize", { request, decision: "approve" });
      const callback = new URL(approved.headers.get("location") ?? "");
      const params = oauth.validateAuthResponse(as, client, callback, state);

      const tokens = await withNonceRetry(async () =>
        oauth.processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(
            as,
            client,
            oauth.None(),
            params,
            redirectUri,
            verifier,
            { DPoP: handle, ...insecure },
          ),
        ),
      );
      assert.equal(tokens.token_type, "dpop");
      const first = tokens.refresh_token ?? "";
      assert.match(first, /^apr_/);
      const partner = await issuer.identity.partner();
      assert.equal((await introspect(as, partner.key, tokens.access_token)).cnf?.jkt, jkt);

      const refresh = (dpop: oauth.DPoPHandle, refreshToken: string) =>
        refreshWith(as, client, refreshToken, dpop);
      const thief = await dpopKey(client);
      assert.equal(await refusalOf(refresh(thief.handle, first)), "invalid_grant");
      // Refused before rotation: the same refresh token is still the live one, and rotates now.
      const refreshed = await refresh(handle, first);
      assert.equal(refreshed.token_type, "dpop");
      assert.match(refreshed.refresh_token ?? "", /^apr_/);
      assert.notEqual(refreshed.refresh_token, first);
      assert.equal((await introspect(as, partner.key, refreshed.access_token)).cnf?.jkt, jkt);
    });

    it("binds a token to a key of each algorithm the metadata advertises", async () => {
      const partner = await issuer.identity.partner();
      for (const alg of as.dpop_signing_alg_values_supported ?? []) {
        const pair = await oauth.generateKeyPair(alg, { extractable: true });
        const jkt = await calculateJwkThumbprint(await exportJWK(pair.publicKey));
        const tokens = await mintBound(oauth.DPoP(agent, pair));
        assert.equal(tokens.token_type, "dpop", alg);
        assert.equal((await introspect(as, partner.key, tokens.access_token)).cnf?.jkt, jkt, alg);
      }
    });

    it("calls a partner with the token and its proof, and the partner refuses the token as Bearer", async () => {
      const { handle } = await dpopKey(agent);
      const tokens = await mintBound(handle);
      assert.equal(tokens.token_type, "dpop");
      const partner = await startPartner(issuer.issuer, (await issuer.identity.partner()).key);
      try {
        // oauth4webapi's resource request: Authorization: DPoP, a proof with htm, htu and ath.
        const proven = await oauth.protectedResourceRequest(
          tokens.access_token,
          "GET",
          new URL(partner.url),
          new Headers(),
          null,
          { DPoP: handle, ...insecure },
        );
        assert.equal(proven.status, 200, await proven.clone().text());
        assert.ok(((await proven.json()) as { email?: string }).email);

        const copied = await fetch(partner.url, {
          headers: { authorization: `Bearer ${tokens.access_token}` },
        });
        const body = (await copied.json()) as { code?: string };
        assert.equal(copied.status, 401, JSON.stringify(body));
        assert.equal(body.code, "session_token_proof_required");
      } finally {
        await partner.close();
      }
    });
  });
}
