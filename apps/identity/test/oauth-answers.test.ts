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
          },
          redirectUri: REDIRECT,
          state: undefined,
          codeChallenge: createHash("sha256").update(VERIFIER).digest("base64url"),
          resource: { url: RESOURCE, partnerId: partner.id, partnerName: "Notes" },
          scope,
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
      const metadata = (await response.json()) as { scopes_supported?: unknown };
      assert.deepEqual(metadata.scopes_supported, []);
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
  });
}
