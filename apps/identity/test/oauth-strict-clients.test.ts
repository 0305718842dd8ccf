import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import * as client from "openid-client";
import { decideDeviceLogin } from "../src/domain/device-login.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { startTestIssuer, type TestIssuer } from "./support/issuer.ts";
import { webClient } from "./support/web-client.ts";

/**
 * What strict clients found at the authorization server (issue 56): metadata as RFC 8414 writes
 * it, introspection with openid-client's default authentication for a client with a secret, and
 * the device authorization answer Keycloak and Hydra give.
 */

/** RFC 8414 section 2's registry of client authentication methods (IANA, "OAuth Parameters"). */
const REGISTERED_AUTH_METHODS = new Set([
  "none",
  "client_secret_post",
  "client_secret_basic",
  "client_secret_jwt",
  "private_key_jwt",
  "tls_client_auth",
  "self_signed_tls_client_auth",
]);

const insecure = { execute: [client.allowInsecureRequests], algorithm: "oauth2" as const };

for (const engine of testEngines()) {
  describe(`OAuth for strict clients (${engine})`, () => {
    let as: TestIssuer;
    before(async () => {
      as = await startTestIssuer(engine);
    });
    after(async () => {
      await as.close();
    });

    /** The issuer, discovered by openid-client as the CLI's public client. */
    function discoverAsCli() {
      return client.discovery(
        new URL(as.issuer),
        "agentpass-cli",
        undefined,
        client.None(),
        insecure,
      );
    }

    /** A device login of the CLI, approved, and its access token. */
    async function deviceLogin() {
      const account = await as.identity.account();
      const config = await discoverAsCli();
      const started = await client.initiateDeviceAuthorization(config, {});
      assert.equal(
        await decideDeviceLogin(as.identity.ctx, started.user_code, account.id, true),
        true,
      );
      const tokens = await client.pollDeviceAuthorizationGrant(config, { ...started, interval: 0 });
      return { config, account, accessToken: tokens.access_token };
    }

    describe("GET /.well-known/oauth-authorization-server", () => {
      it("omits every claim with zero elements and lists only registered auth methods (RFC 8414 section 2)", async () => {
        const response = await fetch(`${as.issuer}/.well-known/oauth-authorization-server`);
        const metadata = (await response.json()) as Record<string, unknown>;
        for (const [claim, value] of Object.entries(metadata)) {
          if (Array.isArray(value)) assert.ok(value.length > 0, `${claim} is an empty array`);
          if (claim.endsWith("_auth_methods_supported")) {
            for (const method of value as string[]) {
              assert.ok(REGISTERED_AUTH_METHODS.has(method), `${claim}: ${method} is unregistered`);
            }
          }
        }
        assert.ok(!("scopes_supported" in metadata), "no scopes: the claim is omitted");
        assert.deepEqual(metadata.introspection_endpoint_auth_methods_supported, [
          "client_secret_basic",
          "client_secret_post",
        ]);
      });
    });

    describe("POST /oauth/introspect", () => {
      it("takes the partner key as client_secret_post, openid-client's default for a secret", async () => {
        const partner = await as.identity.partner();
        const { config, account, accessToken } = await deviceLogin();
        const partnerConfig = new client.Configuration(
          config.serverMetadata(),
          partner.id,
          undefined,
          client.ClientSecretPost(partner.key),
        );
        client.allowInsecureRequests(partnerConfig);
        const active = await client.tokenIntrospection(partnerConfig, accessToken);
        assert.equal(active.active, true);
        assert.equal(active.email, account.email);
        assert.equal(active.sub, account.id);
        assert.deepEqual(await client.tokenIntrospection(partnerConfig, "aps_forged"), {
          active: false,
        });
      });

      it("answers a wrong client_secret in the body 401 invalid_client", async () => {
        const response = await fetch(`${as.issuer}/oauth/introspect`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            token: "aps_x",
            client_id: "partner",
            client_secret: "apk_nope",
          }),
        });
        assert.equal(response.status, 401);
        assert.equal(((await response.json()) as { error: string }).error, "invalid_client");
      });

      it("refuses two ways of authenticating at once (RFC 6749 section 2.3)", async () => {
        const partner = await as.identity.partner();
        const response = await fetch(`${as.issuer}/oauth/introspect`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Bearer ${partner.key}`,
          },
          body: new URLSearchParams({
            token: "aps_x",
            client_id: partner.id,
            client_secret: partner.key,
          }),
        });
        assert.equal(response.status, 400);
        assert.equal(((await response.json()) as { error: string }).error, "invalid_request");
      });

      it("still takes the partner key as a bearer token, though no method names it", async () => {
        const partner = await as.identity.partner();
        const { account, accessToken } = await deviceLogin();
        const response = await fetch(`${as.issuer}/oauth/introspect`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Bearer ${partner.key}`,
          },
          body: new URLSearchParams({ token: accessToken }),
        });
        const body = (await response.json()) as { active: boolean; email?: string };
        assert.deepEqual([body.active, body.email], [true, account.email]);
      });
    });

    describe("POST /oauth/device_authorization", () => {
      it("answers verification_uri_complete, which only pre-fills the code at /device", async () => {
        const config = await discoverAsCli();
        const started = await client.initiateDeviceAuthorization(config, {});
        assert.equal(
          started.verification_uri_complete,
          `${as.issuer}/device?code=${started.user_code}`,
        );
        const account = await as.identity.account();
        const browser = webClient({ request: (path, init) => fetch(path, init) }, as.issuer);
        browser.jar.set("agentpass_session", await startWebSession(as.identity.ctx, account.id));
        const link = new URL(started.verification_uri_complete as string);
        const page = await browser.text(link.pathname + link.search);
        assert.match(page, new RegExp(`name="code"[^>]* value="${started.user_code}"`));
        assert.match(page, /A link never approves a login/);
        assert.ok(!/name="decision"/.test(page), "no approve button on the page a link opens");
      });
    });
  });
}
