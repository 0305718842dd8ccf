import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { startWebSession } from "../src/domain/web-sessions.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { webClient } from "./support/web-client.ts";

const LOOPBACK = "http://127.0.0.1/callback";
const PRIVATE_USE = "com.example.app:/oauth/callback";

for (const engine of testEngines()) {
  describe(`native apps' redirect URIs, RFC 8252 (${engine})`, () => {
    let identity: TestIdentity;
    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(async () => {
      await identity.close();
    });

    function register(redirectUris: string[]) {
      return identity.app.request("/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          redirect_uris: redirectUris,
          client_name: "Desktop agent",
          token_endpoint_auth_method: "none",
        }),
      });
    }

    /** A signed-in browser's consent to `redirectUri`: the 303 back to the client, or the refusal. */
    async function consentTo(clientId: string, redirectUri: string, verifier: string) {
      const account = await identity.account();
      const browser = webClient(identity.app);
      browser.jar.set("agentpass_session", await startWebSession(identity.ctx, account.id));
      const query = new URLSearchParams({
        client_id: clientId,
        redirect_uri: redirectUri,
        response_type: "code",
        state: "s1",
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      }).toString();
      const page = await browser.get(`/oauth/authorize?${query}`);
      if (page.status !== 200) return page;
      // The consent form's answer may go to the app: its origin, or its private-use scheme.
      const destination = URL.canParse(redirectUri) ? new URL(redirectUri) : undefined;
      const source =
        destination?.protocol.startsWith("http") === true
          ? destination.origin
          : destination?.protocol;
      assert.match(
        page.headers.get("content-security-policy") ?? "",
        new RegExp(`form-action 'self' ${source?.replaceAll(".", "\\.")};`),
      );
      return browser.post("/oauth/authorize", { request: query, decision: "approve" });
    }

    it("registers a loopback and a private-use redirect, and sends each back where the app listens", async () => {
      const registered = await register([LOOPBACK, PRIVATE_USE]);
      const body = (await registered.json()) as { client_id: string; redirect_uris: string[] };
      assert.equal(registered.status, 201, JSON.stringify(body));
      assert.deepEqual(body.redirect_uris, [LOOPBACK, PRIVATE_USE]);

      // The app's local server got whatever port the OS gave it (section 7.3).
      const onPort = "http://127.0.0.1:53817/callback";
      const verifier = randomBytes(32).toString("base64url");
      const approved = await consentTo(body.client_id, onPort, verifier);
      assert.equal(approved.status, 303);
      const callback = new URL(approved.headers.get("location") ?? "");
      assert.equal(`${callback.origin}${callback.pathname}`, onPort);
      assert.equal(callback.searchParams.get("state"), "s1");
      const tokens = await identity.app.request("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: callback.searchParams.get("code") ?? "",
          redirect_uri: onPort,
          client_id: body.client_id,
          code_verifier: verifier,
        }).toString(),
      });
      assert.equal(tokens.status, 200);
      assert.match(((await tokens.json()) as { access_token: string }).access_token, /^aps_/);

      const toApp = await consentTo(body.client_id, PRIVATE_USE, verifier);
      assert.equal(toApp.status, 303);
      assert.match(
        toApp.headers.get("location") ?? "",
        /^com\.example\.app:\/oauth\/callback\?code=/,
      );
    });

    it("matches the loopback path exactly, and refuses schemes a browser runs itself", async () => {
      const registered = (await (await register([LOOPBACK])).json()) as { client_id: string };
      const verifier = randomBytes(32).toString("base64url");
      const elsewhere = await consentTo(
        registered.client_id,
        "http://127.0.0.1:53817/other",
        verifier,
      );
      assert.equal(elsewhere.status, 400, "never redirected to an unregistered path");
      assert.equal(elsewhere.headers.get("location"), null);

      for (const uri of ["javascript:alert(1)", "data:text/html,hi", "http://app.example/cb"]) {
        const refused = await register([uri]);
        assert.equal(refused.status, 400, uri);
        assert.equal(((await refused.json()) as { error: string }).error, "invalid_redirect_uri");
      }
    });
  });
}
