import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, type Engine, freePort, testEngines } from "@agentpass/db/testing";
import { startServer } from "@agentpass/http";
import * as client from "openid-client";
import { chromium } from "playwright-core";
import tokenIntrospection from "token-introspection";
import { loadConfig } from "../src/config.ts";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey } from "../src/domain/credentials.ts";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { listConnectedApps } from "../src/domain/grants.ts";
import { addPartnerResource } from "../src/domain/oauth.ts";
import { createPartner } from "../src/domain/partners.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { openIdentityService } from "../src/service.ts";
import { webClient } from "./support/web-client.ts";

/** AgentPass on a real port whose PUBLIC_URL is that port: a stock client needs only the URL. */
async function startIssuer(engine: Engine) {
  const database = await createTestDatabase(engine);
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const loaded = loadConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl,
    LOG_LEVEL: "silent",
    PUBLIC_URL: issuer,
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const service = await openIdentityService(loaded.config);
  const server = await startServer(service, { port, host: "127.0.0.1" });
  const { ctx } = service;
  return {
    issuer,
    ctx,
    service,
    async account() {
      const created = await createAccount(ctx, `person-${crypto.randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      return created.account;
    },
    async partner(resource?: string) {
      const owner = await this.account();
      const created = await createPartner(ctx, { ownerAccountId: owner.id, name: "Notes" });
      if (!created.ok) throw new Error(created.reason);
      const issued = await issueKey(ctx, "partner", created.partner.id, "server");
      if (!issued.ok) throw new Error(issued.code);
      if (resource)
        assert.deepEqual(await addPartnerResource(ctx, created.partner.id, resource), { ok: true });
      return { id: created.partner.id, key: issued.key };
    },
    /** A browser signed in as a new account. */
    async browser() {
      const account = await this.account();
      const token = await startWebSession(ctx, account.id);
      const browser = webClient({ request: (path, init) => fetch(path, init) }, issuer);
      browser.jar.set("agentpass_session", token);
      return { browser, account };
    },
    async verify(partnerKey: string, sessionToken: string) {
      const response = await fetch(`${issuer}/api/verify`, {
        method: "POST",
        headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
        body: JSON.stringify({ sessionToken }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
    async close() {
      await server.close();
      await database.drop();
    },
  };
}

/** A PKCE verifier and its S256 challenge (RFC 7636). */
const VERIFIER = "v".repeat(43);
const CHALLENGE = createHash("sha256").update(VERIFIER).digest("base64url");

const insecure = { execute: [client.allowInsecureRequests], algorithm: "oauth2" as const };

async function form(
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  return {
    response,
    body: (await response.json().catch(() => null)) as Record<string, unknown> | null,
  };
}

for (const engine of testEngines()) {
  describe(`OAuth authorization server (${engine})`, () => {
    let as: Awaited<ReturnType<typeof startIssuer>>;
    before(async () => {
      as = await startIssuer(engine);
    });
    after(async () => {
      await as.close();
    });

    it("is discovered by a stock client from the issuer URL alone (RFC 8414)", async () => {
      const config = await client.discovery(
        new URL(as.issuer),
        "agentpass-cli",
        undefined,
        client.None(),
        insecure,
      );
      const metadata = config.serverMetadata();
      assert.equal(metadata.issuer, as.issuer);
      assert.equal(metadata.token_endpoint, `${as.issuer}/oauth/token`);
      assert.deepEqual(metadata.code_challenge_methods_supported, ["S256"]);
      assert.equal(metadata.client_id_metadata_document_supported, true);
      const cors = await fetch(`${as.issuer}/.well-known/oauth-authorization-server`, {
        headers: { origin: "https://app.example" },
      });
      assert.equal(cors.headers.get("access-control-allow-origin"), "*");
    });

    it("logs a person in by device flow, refreshes, lets a partner introspect, and revokes", async () => {
      const partner = await as.partner();
      const account = await as.account();
      const config = await client.discovery(
        new URL(as.issuer),
        "agentpass-cli",
        undefined,
        client.None(),
        insecure,
      );
      const started = await client.initiateDeviceAuthorization(config, {});
      assert.match(started.user_code, /^[A-Z]{4}-[A-Z]{4}$/);
      assert.equal(started.verification_uri, `${as.issuer}/device`);
      assert.equal(await decideDeviceLogin(as.ctx, started.user_code, account.id, true), true);
      const tokens = await client.pollDeviceAuthorizationGrant(config, { ...started, interval: 0 });
      assert.match(tokens.access_token, /^aps_/);
      assert.match(tokens.refresh_token ?? "", /^apu_/);
      assert.equal(tokens.token_type, "bearer");
      assert.equal(tokens.expires_in, 300);
      // The access token is a session token: `POST /api/verify` takes it unchanged.
      assert.deepEqual(await as.verify(partner.key, tokens.access_token), {
        status: 200,
        body: { email: account.email },
      });

      // refresh_token grant: a user key in, a session token out; the CLI's key does not rotate.
      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token as string);
      assert.match(refreshed.access_token, /^aps_/);
      assert.equal(refreshed.refresh_token, undefined);

      // RFC 7662 with openid-client (Basic) and with token-introspection (Bearer).
      const partnerConfig = new client.Configuration(
        config.serverMetadata(),
        partner.id,
        undefined,
        client.ClientSecretBasic(partner.key),
      );
      client.allowInsecureRequests(partnerConfig);
      const active = await client.tokenIntrospection(partnerConfig, refreshed.access_token);
      assert.equal(active.active, true);
      assert.equal(active.email, account.email);
      assert.equal(active.sub, account.id);
      assert.equal(active.client_id, "agentpass-cli");
      assert.equal(active.iss, as.issuer);
      assert.equal(active.token_type, "Bearer");
      assert.equal(typeof active.exp, "number");
      const introspect = tokenIntrospection({
        endpoint: `${as.issuer}/oauth/introspect`,
        access_token: partner.key,
      });
      const viaLibrary = (await introspect(refreshed.access_token)) as Record<string, unknown>;
      assert.equal(viaLibrary.email, account.email);
      await assert.rejects(introspect("aps_forged"), /not active/i);
      const inactive = await form(
        `${as.issuer}/oauth/introspect`,
        { token: "aps_forged" },
        {
          authorization: `Bearer ${partner.key}`,
        },
      );
      assert.deepEqual(inactive.body, { active: false });

      // RFC 7009: revoking the refresh token revokes the key and every token from it.
      await client.tokenRevocation(config, tokens.refresh_token as string);
      assert.equal((await as.verify(partner.key, refreshed.access_token)).status, 401);
      await assert.rejects(
        client.refreshTokenGrant(config, tokens.refresh_token as string),
        (error: unknown) => {
          assert.equal((error as { error?: string }).error, "invalid_grant");
          return true;
        },
      );
      assert.deepEqual(
        (await client.tokenIntrospection(partnerConfig, refreshed.access_token)).active,
        false,
      );
    });

    it("answers introspection with a revoked or unknown partner key 401 with a challenge", async () => {
      const response = await fetch(`${as.issuer}/oauth/introspect`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: "Bearer apk_nope",
        },
        body: "token=aps_x",
      });
      assert.equal(response.status, 401);
      assert.match(response.headers.get("www-authenticate") ?? "", /^Bearer /);
      assert.equal(((await response.json()) as { error: string }).error, "invalid_client");
      assert.equal(response.headers.get("access-control-allow-origin"), null);
    });

    it("spends a device code only when its answer reached the device", async () => {
      const account = await as.account();
      const started = (
        await form(`${as.issuer}/oauth/device_authorization`, { client_id: "agentpass-cli" })
      ).body as {
        device_code: string;
        user_code: string;
      };
      assert.equal(await decideDeviceLogin(as.ctx, started.user_code, account.id, true), true);
      // A poll whose connection is gone before the answer: the key it made is taken back.
      const body = new URLSearchParams({
        grant_type: "urn:ietf:params:oauth:grant-type:device_code",
        device_code: started.device_code,
        client_id: "agentpass-cli",
      }).toString();
      const { port } = new URL(as.issuer);
      await new Promise<void>((resolve) => {
        const socket = connect(Number(port), "127.0.0.1", () => {
          socket.write(
            `POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          );
          // A reset, as when the device's process dies: the answer cannot be delivered.
          socket.resetAndDestroy();
          resolve();
        });
      });
      // The device polls again after the interval (5 s), as RFC 8628 asks.
      await new Promise((resolve) => setTimeout(resolve, 5_200));
      const answered = await form(
        `${as.issuer}/oauth/token`,
        Object.fromEntries(new URLSearchParams(body)),
      );
      assert.equal(answered.response.status, 200, JSON.stringify(answered.body));
      assert.match(String(answered.body?.refresh_token), /^apu_/);
      const apps = await listConnectedApps(as.ctx, account.id);
      assert.equal(apps.length, 1, "one working grant, not two");
    });

    it("refuses what RFC 6749 section 5.2 refuses, without caching", async () => {
      const token = `${as.issuer}/oauth/token`;
      const cases: [Record<string, string>, number, string][] = [
        [{ grant_type: "password", client_id: "agentpass-cli" }, 400, "unsupported_grant_type"],
        [{ client_id: "agentpass-cli" }, 400, "invalid_request"],
        [{ grant_type: "refresh_token", refresh_token: "apu_nope" }, 400, "invalid_grant"],
        [{ grant_type: "authorization_code", code: "x", client_id: "c" }, 400, "invalid_request"],
        [
          {
            grant_type: "urn:ietf:params:oauth:grant-type:device_code",
            device_code: "x",
            client_id: "nope",
          },
          401,
          "invalid_client",
        ],
      ];
      for (const [fields, status, error] of cases) {
        const { response, body } = await form(token, fields);
        assert.equal(response.status, status, JSON.stringify(fields));
        assert.equal(body?.error, error);
        assert.equal(typeof body?.error_description, "string");
        assert.equal(response.headers.get("cache-control"), "no-store");
      }
      const repeated = await fetch(token, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=refresh_token&refresh_token=a&refresh_token=b",
      });
      assert.equal(((await repeated.json()) as { error: string }).error, "invalid_request");
      const json = await fetch(token, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(json.status, 400);
      // The media type is matched case-insensitively, parameters allowed.
      const mixed = await fetch(token, {
        method: "POST",
        headers: { "content-type": "Application/X-WWW-Form-Urlencoded; charset=UTF-8" },
        body: "grant_type=password",
      });
      assert.equal(((await mixed.json()) as { error: string }).error, "unsupported_grant_type");
    });

    it("runs authorization code + PKCE for a registered client, bound to a resource, rotating its refresh token", async () => {
      const resource = "http://127.0.0.1:9/notes";
      const partner = await as.partner(resource);
      const other = await as.partner();
      const redirectUri = "http://127.0.0.1:9/callback";
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: [redirectUri],
          client_name: "Notes agent",
          token_endpoint_auth_method: "none",
        },
        client.None(),
        insecure,
      );
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
        resource,
      });
      const { browser, account } = await as.browser();
      const consent = await browser.get(url.pathname + url.search);
      const page = await consent.text();
      assert.equal(consent.status, 200, page);
      assert.match(page, /Notes agent/);
      assert.match(page, /unverified/);
      assert.match(page, new RegExp(resource.replaceAll(".", "\\.")));
      const query =
        /name="request" value="([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&") ?? "";
      const approved = await browser.post("/oauth/authorize", {
        request: query,
        decision: "approve",
      });
      assert.equal(approved.status, 303);
      const callback = new URL(approved.headers.get("location") ?? "");
      assert.equal(callback.searchParams.get("iss"), as.issuer);
      const tokens = await client.authorizationCodeGrant(
        config,
        callback,
        {
          pkceCodeVerifier: verifier,
          expectedState: state,
        },
        { resource },
      );
      assert.match(tokens.access_token, /^aps_/);
      assert.deepEqual(await as.verify(partner.key, tokens.access_token), {
        status: 200,
        body: { email: account.email },
      });
      assert.equal(
        (await as.verify(other.key, tokens.access_token)).status,
        401,
        "bound to its resource",
      );

      // The code is spent; a replay revokes what it gave.
      const replay = await form(`${as.issuer}/oauth/token`, {
        grant_type: "authorization_code",
        code: callback.searchParams.get("code") ?? "",
        redirect_uri: redirectUri,
        client_id: config.clientMetadata().client_id,
        code_verifier: verifier,
      });
      assert.equal(replay.body?.error, "invalid_grant");
      await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token as string));
    });

    it("rotates a browser flow's refresh token, gives a caller racing it the same one, and ends the grant by RFC 7009 with any of them", async () => {
      const resource = "http://127.0.0.1:9/rotation";
      const partner = await as.partner(resource);
      const redirectUri = "http://127.0.0.1:9/cb";
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        { redirect_uris: [redirectUri], token_endpoint_auth_method: "none" },
        client.None(),
        insecure,
      );
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        resource,
      });
      const { browser } = await as.browser();
      const page = await (await browser.get(url.pathname + url.search)).text();
      const query =
        /name="request" value="([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&") ?? "";
      const approved = await browser.post("/oauth/authorize", {
        request: query,
        decision: "approve",
      });
      const callback = new URL(approved.headers.get("location") ?? "");
      const first = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: client.skipStateCheck,
      });
      const second = await client.refreshTokenGrant(config, first.refresh_token as string);
      assert.match(second.refresh_token ?? "", /^apr_/);
      assert.notEqual(second.refresh_token, first.refresh_token);
      assert.equal((await as.verify(partner.key, second.access_token)).status, 200);
      // A caller that raced the first refresh with the same token gets the same successor.
      const racer = await client.refreshTokenGrant(config, first.refresh_token as string);
      assert.equal(racer.refresh_token, second.refresh_token);
      // Revoking with the replaced token ends the whole grant, every token of it.
      await client.tokenRevocation(config, first.refresh_token as string);
      await assert.rejects(client.refreshTokenGrant(config, second.refresh_token as string));
      assert.equal((await as.verify(partner.key, second.access_token)).status, 401);
      assert.equal((await as.verify(partner.key, racer.access_token)).status, 401);
      // A rotating key is not a spec user key: the session-token endpoint refuses it.
      const minted = await fetch(`${as.issuer}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${second.refresh_token}` },
      });
      assert.equal(minted.status, 401);
    });

    it("runs authorization code + PKCE with the consent given in Chromium", async () => {
      const resource = "http://127.0.0.1:9/browser";
      const partner = await as.partner(resource);
      const redirectUri = "http://127.0.0.1:9/browser-callback";
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: [redirectUri],
          client_name: "Browser agent",
          token_endpoint_auth_method: "none",
        },
        client.None(),
        insecure,
      );
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: "S256",
        state,
        resource,
      });
      const account = await as.account();
      const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
        headless: true,
        args: ["--no-sandbox"],
      });
      try {
        const context = await browser.newContext();
        await context.addCookies([
          {
            name: "agentpass_session",
            value: await startWebSession(as.ctx, account.id),
            url: as.issuer,
          },
        ]);
        // The client's callback: caught in the browser, as a native app's loopback server would.
        const callback = Promise.withResolvers<URL>();
        await context.route("http://127.0.0.1:9/**", async (route) => {
          callback.resolve(new URL(route.request().url()));
          await route.fulfill({ status: 200, body: "ok" });
        });
        const page = await context.newPage();
        await page.goto(url.href);
        assert.match((await page.textContent("body")) ?? "", /Browser agent/);
        await page.getByRole("button", { name: "Allow" }).click();
        const returned = await callback.promise;
        assert.equal(returned.searchParams.get("iss"), as.issuer);
        const tokens = await client.authorizationCodeGrant(config, returned, {
          pkceCodeVerifier: verifier,
          expectedState: state,
        });
        assert.deepEqual(await as.verify(partner.key, tokens.access_token), {
          status: 200,
          body: { email: account.email },
        });
      } finally {
        await browser.close();
      }
    });

    it("takes a client whose id is the URL of its metadata document, shown as unverified", async () => {
      const redirectUri = "http://127.0.0.1:9/cimd-callback";
      let fetched = 0;
      const documents = createHttpServer((request, response) => {
        fetched++;
        const clientId = `http://127.0.0.1:${(documents.address() as { port: number }).port}/client.json`;
        response.setHeader("content-type", "application/json");
        response.end(
          JSON.stringify({
            client_id: request.url === "/client.json" ? clientId : "https://someone-else.example/",
            client_name: "Metadata agent",
            redirect_uris: [redirectUri],
            token_endpoint_auth_method: "none",
          }),
        );
      });
      await new Promise<void>((resolve) => documents.listen(0, "127.0.0.1", resolve));
      try {
        const { port } = documents.address() as { port: number };
        const clientId = `http://127.0.0.1:${port}/client.json`;
        const discovered = await client.discovery(
          new URL(as.issuer),
          clientId,
          undefined,
          client.None(),
          insecure,
        );
        const verifier = client.randomPKCECodeVerifier();
        const url = client.buildAuthorizationUrl(discovered, {
          redirect_uri: redirectUri,
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
        });
        const { browser, account } = await as.browser();
        // Not yet consented to: a refusal is shown here, with the document's name and host.
        const noPkce = new URL(url);
        noPkce.searchParams.delete("code_challenge");
        const refused = await browser.get(noPkce.pathname + noPkce.search);
        assert.equal(refused.status, 400);
        assert.match(await refused.text(), new RegExp(`Metadata agent.*127\\.0\\.0\\.1:${port}`));
        const page = await (await browser.get(url.pathname + url.search)).text();
        assert.match(page, /Metadata agent/);
        assert.match(page, /unverified name, published at/);
        const query =
          /name="request" value="([^"]+)"/.exec(page)?.[1]?.replaceAll("&amp;", "&") ?? "";
        const approved = await browser.post("/oauth/authorize", {
          request: query,
          decision: "approve",
        });
        const tokens = await client.authorizationCodeGrant(
          discovered,
          new URL(approved.headers.get("location") ?? ""),
          { pkceCodeVerifier: verifier, expectedState: client.skipStateCheck },
        );
        assert.match(tokens.refresh_token ?? "", /^apr_/);
        const partner = await as.partner();
        assert.deepEqual(await as.verify(partner.key, tokens.access_token), {
          status: 200,
          body: { email: account.email },
        });
        assert.equal(fetched, 1, "the document is fetched once, then cached");
        // A document that names another client id is not that client.
        const wrong = await browser.get(
          `/oauth/authorize?${new URLSearchParams({ client_id: `http://127.0.0.1:${port}/other.json`, redirect_uri: redirectUri, response_type: "code" })}`,
        );
        assert.equal(wrong.status, 400);
      } finally {
        await new Promise((resolve) => documents.close(resolve));
      }
    });

    it("answers browser-based clients' preflights on the token endpoint, and none on introspection", async () => {
      const token = await fetch(`${as.issuer}/oauth/token`, {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "POST" },
      });
      assert.equal(token.status, 204);
      assert.equal(token.headers.get("access-control-allow-origin"), "*");
      const introspect = await fetch(`${as.issuer}/oauth/introspect`, {
        method: "OPTIONS",
        headers: { origin: "https://app.example", "access-control-request-method": "POST" },
      });
      assert.equal(introspect.headers.get("access-control-allow-origin"), null);
    });

    it("shows refusals for a client nobody vouched for on its own page, and sends them back once the person granted it access", async () => {
      const redirectUri = "http://127.0.0.1:9/cb2";
      const config = await client.dynamicClientRegistration(
        new URL(as.issuer),
        {
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: "none",
          client_name: "Stranger's agent",
        },
        client.None(),
        insecure,
      );
      const clientId = config.clientMetadata().client_id;
      const { browser } = await as.browser();
      const authorize = (params: Record<string, string>) =>
        browser.get(
          `/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: "code", ...params })}`,
        );
      const evil = await authorize({ redirect_uri: "https://evil.example/cb" });
      assert.equal(evil.status, 400);
      const pkce = { code_challenge: CHALLENGE, code_challenge_method: "S256" };
      const refusals = [
        [{ redirect_uri: redirectUri, state: "s1" }, "PKCE is required"],
        [{ redirect_uri: redirectUri, response_type: "token", ...pkce }, "Only response_type"],
        [
          { redirect_uri: redirectUri, ...pkce, resource: "https://unknown.example/api" },
          "Unknown resource",
        ],
      ] as const;
      for (const [params, reason] of refusals) {
        const refused = await authorize(params);
        assert.equal(refused.status, 400, "shown here, not redirected (RFC 9700 section 4.11.2)");
        assert.equal(refused.headers.get("location"), null);
        const page = await refused.text();
        assert.ok(page.includes(reason), reason);
        assert.match(page, /Stranger(&#39;|&#x27;|')s agent/, "the client's name");
        assert.match(page, /127\.0\.0\.1:9/, "and its domain");
      }

      // The person grants it access: from then on they vouch for it, and errors go back to it.
      const asked = await authorize({ redirect_uri: redirectUri, ...pkce });
      const consent = await asked.text();
      assert.equal(asked.status, 200, consent);
      const query =
        /name="request" value="([^"]+)"/.exec(consent)?.[1]?.replaceAll("&amp;", "&") ?? "";
      const approved = await browser.post("/oauth/authorize", {
        request: query,
        decision: "approve",
      });
      assert.equal(approved.status, 303);
      const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
      const redeemed = await form(`${as.issuer}/oauth/token`, {
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        client_id: clientId,
        code_verifier: VERIFIER,
      });
      assert.equal(redeemed.response.status, 200);
      const noPkce = await authorize({ redirect_uri: redirectUri, state: "s1" });
      assert.equal(noPkce.status, 303);
      const refused = new URL(noPkce.headers.get("location") ?? "");
      assert.equal(refused.searchParams.get("error"), "invalid_request");
      assert.equal(refused.searchParams.get("state"), "s1");
      const unknownTarget = await authorize({
        redirect_uri: redirectUri,
        ...pkce,
        resource: "https://unknown.example/api",
      });
      assert.equal(
        new URL(unknownTarget.headers.get("location") ?? "").searchParams.get("error"),
        "invalid_target",
      );
      const registration = await fetch(`${as.issuer}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: ["http://evil.example/cb"] }),
      });
      assert.equal(registration.status, 400);
      assert.equal(
        ((await registration.json()) as { error: string }).error,
        "invalid_redirect_uri",
      );
    });
  });
}
