import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { addPartnerResource, issueAuthorizationCode } from "../src/domain/oauth.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const RESOURCE = "https://notes.example/mcp";
const REDIRECT = "http://127.0.0.1:9/callback";
const VERIFIER = "v".repeat(43);

for (const engine of testEngines()) {
  describe(`OAuth answers (${engine})`, () => {
    let identity: TestIdentity;
    let partner: Awaited<ReturnType<TestIdentity["partner"]>>;

    before(async () => {
      identity = await openTestIdentity(engine);
      partner = await identity.partner();
      assert.deepEqual(await addPartnerResource(identity.ctx, partner.id, RESOURCE), { ok: true });
    });
    after(() => identity.close());

    function form(path: string, fields: Record<string, string>, authorization?: string) {
      return identity.app.request(path, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          ...(authorization && { authorization }),
        },
        body: new URLSearchParams(fields).toString(),
      });
    }

    /** A consent for `RESOURCE` that asked for `scope`, redeemed without naming the resource. */
    async function tokensFor(scope: string) {
      const account = await identity.account();
      const code = await issueAuthorizationCode(
        identity.ctx,
        {
          client: {
            clientId: "apc_answers",
            clientName: "Answers",
            redirectUris: [REDIRECT],
            kind: "registered",
            dpopBound: false,
          },
          redirectUri: REDIRECT,
          state: undefined,
          codeChallenge: createHash("sha256").update(VERIFIER).digest("base64url"),
          resource: { url: RESOURCE, partnerId: partner.id, partnerName: "Notes" },
          scope,
          dpopJkt: null,
        },
        account.id,
      );
      const response = await form("/oauth/token", {
        grant_type: "authorization_code",
        code,
        redirect_uri: REDIRECT,
        client_id: "apc_answers",
        code_verifier: VERIFIER,
      });
      assert.equal(response.status, 200);
      return (await response.json()) as Record<string, string>;
    }

    async function audienceOf(accessToken: string) {
      const response = await form(
        "/oauth/introspect",
        { token: accessToken },
        `Bearer ${partner.key}`,
      );
      return ((await response.json()) as { aud?: string }).aud;
    }

    it("says in its metadata that it defines no scopes", async () => {
      const response = await identity.app.request("/.well-known/oauth-authorization-server");
      const metadata = (await response.json()) as Record<string, unknown>;
      // RFC 8414 section 2: a claim with zero elements is omitted.
      assert.ok(!("scopes_supported" in metadata));
    });

    it("never echoes a scope it did not grant, on the code or the refresh", async () => {
      const tokens = await tokensFor("notes:write offline_access");
      assert.ok(!("scope" in tokens), JSON.stringify(tokens));
      const refreshed = await form("/oauth/token", {
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token ?? "",
        client_id: "apc_answers",
      });
      assert.ok(!("scope" in ((await refreshed.json()) as object)));
    });

    it("binds tokens to the consented resource when the token requests leave it out", async () => {
      const tokens = await tokensFor("");
      assert.equal(await audienceOf(tokens.access_token ?? ""), partner.id);
      const refreshed = (await (
        await form("/oauth/token", {
          grant_type: "refresh_token",
          refresh_token: tokens.refresh_token ?? "",
          client_id: "apc_answers",
        })
      ).json()) as Record<string, string>;
      assert.equal(await audienceOf(refreshed.access_token ?? ""), partner.id);
    });

    it("answers every refusal of its endpoints in OAuth's wire format, 413 included", async () => {
      const endpoints = [
        "/oauth/token",
        "/oauth/device_authorization",
        "/oauth/introspect",
        "/oauth/revoke",
        "/oauth/register",
      ];
      for (const path of endpoints) {
        const large = await identity.app.request(path, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Bearer ${partner.key}`,
          },
          body: `token=${"a".repeat(20_000)}`,
        });
        assert.equal(large.status, 413, path);
        const body = (await large.json()) as Record<string, unknown>;
        assert.equal(body.error, "invalid_request", path);
        assert.equal(typeof body.error_description, "string", path);
        assert.deepEqual(Object.keys(body).sort(), ["error", "error_description"], path);
        assert.equal(large.headers.get("cache-control"), "no-store", path);
      }
      const repeated = await form("/oauth/token", {}, undefined);
      assert.deepEqual(await repeated.json(), {
        error: "invalid_request",
        error_description: "Send grant_type",
      });
    });

    it("answers a bad partner key with the challenge of the scheme the caller used", async () => {
      const basic = await form(
        "/oauth/introspect",
        { token: "aps_x" },
        `Basic ${Buffer.from("partner:apk_wrong").toString("base64")}`,
      );
      assert.equal(basic.status, 401);
      assert.match(basic.headers.get("www-authenticate") ?? "", /^Basic realm="agentpass"/);
      const bearer = await form("/oauth/introspect", { token: "aps_x" }, "Bearer apk_wrong");
      assert.equal(bearer.status, 401);
      assert.match(
        bearer.headers.get("www-authenticate") ?? "",
        /^Bearer realm="agentpass", error="invalid_token"/,
      );
    });

    // Last: it spends this address's budget of unknown partner keys.
    it("answers a budget spent with 429 temporarily_unavailable and Retry-After, never slow_down", async () => {
      let refused: Response | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        const answer = await form("/oauth/introspect", { token: "x" }, "Bearer apk_wrong");
        if (answer.status === 429) refused = answer;
      }
      assert.ok(refused, "unknown partner keys are bounded per address");
      assert.equal(((await refused.json()) as { error: string }).error, "temporarily_unavailable");
      assert.ok(Number(refused.headers.get("retry-after")) > 0);
    });
  });
}
