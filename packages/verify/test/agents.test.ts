import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, freePort, testEngines } from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import express from "express";
import { Hono } from "hono";
import {
  agentJwt,
  call,
  ed25519Key,
  hostJwt,
} from "../../../apps/identity/test/support/agent-auth-client.ts";
import { agentPassAuth as expressAuth } from "../src/express.ts";
import { type AgentPassVariables, agentPassAuth as honoAuth } from "../src/hono.ts";
import { createVerifier, isAgentJwt, type Verifier } from "../src/index.ts";

/**
 * The library with agents (issue 54), against a real AgentPass: a verification names the agent
 * acting for the person; an agent's JWT, good once, is never answered from the cache; the
 * middlewares hand the agent to the handler and, when asked, name AgentPass's Agent Auth
 * discovery in their 401s.
 */

const API = "https://api.partner.example";

for (const engine of testEngines()) {
  describe(`@agentpass/verify with agents (${engine})`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let identity: TestIdentityService;
    let verifier: Verifier;
    let userKey: string;
    let agent: { id: string; jwt: () => Promise<string> };
    const email = "agents.person@example.com";

    before(async () => {
      database = await createTestDatabase(engine);
      const port = await freePort();
      const issuer = `http://127.0.0.1:${port}`;
      identity = await startTestIdentityService({
        databaseUrl: database.databaseUrl,
        port,
        env: { PUBLIC_URL: issuer },
      });
      const partner = await identity.createPartner({ name: "API", ownerEmail: "o@example.com" });
      await identity.addPartnerResource(partner.id, `${API}/`);
      const partnerKey = (await identity.createPartnerKey(partner.id)).key;
      verifier = createVerifier({ partnerKey, apiUrl: identity.url, cacheTtlMs: 5_000 });
      userKey = (await identity.createUserKey(email)).key;
      const host = await ed25519Key();
      const key = await ed25519Key();
      const registered = await call(`${issuer}/agent/register`, {
        bearer: await hostJwt(host, issuer, { agent_public_key: key.jwk }),
        body: { name: "coder" },
      });
      const code = (registered.body.approval as { user_code: string }).user_code;
      assert.equal(await identity.decideAgent(code, email), "decided");
      const id = registered.body.agent_id as string;
      agent = { id, jwt: () => agentJwt(key, host.thumbprint, id, API) };
    });
    after(async () => {
      await identity.close();
      await database.drop();
    });

    it("names the agent, and never serves an agent's JWT from its cache", async () => {
      const jwt = await agent.jwt();
      assert.equal(isAgentJwt(jwt), true);
      const first = await verifier.verify(jwt);
      assert.equal(first.ok, true);
      assert.deepEqual(first.ok && first.agent, { id: agent.id, name: "coder" });
      const again = await verifier.verify(jwt);
      assert.equal(again.ok, false, "a replay is asked of AgentPass, which refuses it");
      assert.equal(!again.ok && again.code, "session_token_invalid");
      const minted = await fetch(`${identity.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      }).then((response) => response.json());
      assert.equal(isAgentJwt(minted.sessionToken), false);
      const plain = await verifier.verify(minted.sessionToken);
      assert.ok(plain.ok);
      assert.equal("agent" in plain, false, "a token without an agent has no agent");
    });

    it("hands the agent to Express and Hono handlers, and names the discovery in 401s", async () => {
      const options = { agentAuthChallenge: identity.url };
      const app = express();
      app.use(expressAuth(verifier, options));
      app.get("/me", (req, res) => {
        res.json({ email: req.agentpassEmail, agent: req.agentpassAgent ?? null });
      });
      const server = app.listen(0);
      await new Promise((resolve) => server.once("listening", resolve));
      try {
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const me = await fetch(`${base}/me`, {
          headers: { authorization: `Bearer ${await agent.jwt()}` },
        });
        assert.deepEqual(await me.json(), { email, agent: { id: agent.id, name: "coder" } });
        const refused = await fetch(`${base}/me`);
        assert.equal(refused.status, 401);
        assert.equal(
          refused.headers.get("www-authenticate"),
          `Bearer, AgentPass-Session header="x-session-token", AgentAuth discovery="${identity.url}/.well-known/agent-configuration"`,
        );
      } finally {
        server.close();
      }
      const hono = new Hono<{ Variables: AgentPassVariables }>()
        .use(honoAuth(verifier, options))
        .get("/me", (c) => c.json({ agent: c.var.agentpassAgent ?? null }));
      const viaHono = await hono.request("/me", {
        headers: { authorization: `Bearer ${await agent.jwt()}` },
      });
      assert.deepEqual(await viaHono.json(), { agent: { id: agent.id, name: "coder" } });
      const without = await hono.request("/me");
      assert.match(without.headers.get("www-authenticate") ?? "", /, AgentAuth discovery="/);
      const unasked = new Hono().use(honoAuth(verifier)).get("/me", (c) => c.text("ok"));
      assert.doesNotMatch(
        (await unasked.request("/me")).headers.get("www-authenticate") ?? "",
        /AgentAuth/,
      );
    });
  });
}
