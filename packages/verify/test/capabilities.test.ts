import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, freePort, testEngines } from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import {
  agentJwt,
  call,
  ed25519Key,
  hostJwt,
} from "../../../apps/identity/test/support/agent-auth-client.ts";
import { type Capability, createVerifier, type VerifierFault } from "../src/index.ts";

/**
 * Capabilities through the library (issue 54), against a real AgentPass: a partner declares
 * what it offers and its location asks whether an agent may execute, with section 5.11's
 * refusals handed through as they came; no call throws, and a fault that is no verdict on the
 * agent (AgentPass out of reach, our key refused) is a 503 that `onError` hears of once.
 */

const API = "https://api.partner.example";
const LOCATION = `${API}/agent/execute`;
const SEND: Capability = {
  name: "send_invoice",
  description: "Send an invoice",
  location: LOCATION,
  input: {
    type: "object",
    required: ["amount"],
    properties: { amount: { type: "number" }, currency: { type: "string" } },
  },
};

for (const engine of testEngines()) {
  describe(`@agentpass/verify capabilities (${engine})`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let identity: TestIdentityService;
    let partnerKey: string;
    let agent: { id: string; jwt: (aud?: string) => Promise<string> };
    const faults: VerifierFault[] = [];
    const email = "capable.person@example.com";

    before(async () => {
      database = await createTestDatabase(engine);
      const port = await freePort();
      const issuer = `http://127.0.0.1:${port}`;
      identity = await startTestIdentityService({
        databaseUrl: database.databaseUrl,
        port,
        env: { PUBLIC_URL: issuer },
      });
      const partner = await identity.createPartner({
        name: "Invoices",
        ownerEmail: "o@example.com",
      });
      await identity.addPartnerResource(partner.id, `${API}/`);
      partnerKey = (await identity.createPartnerKey(partner.id)).key;
      const verifier = createVerifier({ partnerKey, apiUrl: identity.url });
      const declared = await verifier.declareCapabilities?.([SEND]);
      assert.ok(declared?.ok, JSON.stringify(declared));
      await identity.createUserKey(email);
      const host = await ed25519Key();
      const key = await ed25519Key();
      const registered = await call(`${issuer}/agent/register`, {
        bearer: await hostJwt(host, issuer, { agent_public_key: key.jwk }),
        body: {
          name: "accountant",
          capabilities: [{ name: "send_invoice", constraints: { currency: { in: ["EUR"] } } }],
        },
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const code = (registered.body.approval as { user_code: string }).user_code;
      assert.equal(await identity.decideAgent(code, email), "decided");
      const id = registered.body.agent_id as string;
      agent = { id, jwt: (aud = LOCATION) => agentJwt(key, host.thumbprint, id, aud) };
    });
    after(async () => {
      await identity.close();
      await database.drop();
    });

    it("authorizes an execution within the grant and hands refusals through as they came", async () => {
      const verifier = createVerifier({ partnerKey, apiUrl: identity.url });
      const allowed = await verifier.authorizeCapability?.(await agent.jwt(), "send_invoice", {
        amount: 12,
        currency: "EUR",
      });
      assert.deepEqual(allowed, {
        ok: true,
        email,
        agent: { id: agent.id, name: "accountant" },
        capability: "send_invoice",
        constraints: { currency: { in: ["EUR"] } },
      });
      const refused = await verifier.authorizeCapability?.(await agent.jwt(), "send_invoice", {
        amount: 12,
        currency: "USD",
      });
      assert.equal(refused?.ok, false);
      assert.equal(refused?.ok === false && refused.status, 403);
      assert.deepEqual(refused?.ok === false && refused.body.violations, [
        { field: "currency", constraint: { in: ["EUR"] }, actual: "USD" },
      ]);
      const wrongAudience = await verifier.authorizeCapability?.(
        await agent.jwt(API),
        "send_invoice",
        {
          amount: 1,
          currency: "EUR",
        },
      );
      assert.equal(wrongAudience?.ok === false && wrongAudience.error, "invalid_jwt");
    });

    it("never throws, and answers a fault with no verdict on the agent as 503", async () => {
      const verifier = createVerifier({
        partnerKey,
        apiUrl: identity.url,
        onError: (fault) => faults.push(fault),
      });
      for (const [token, capability, args] of [
        [undefined, "send_invoice", {}],
        [42, "send_invoice", {}],
        ["x", "", {}],
        ["x", "send_invoice", []],
        ["x", "send_invoice", "nope"],
      ] as const) {
        const result = await verifier.authorizeCapability?.(token, capability, args);
        assert.equal(result?.ok, false);
        assert.ok(result?.ok === false && [400, 401].includes(result.status));
      }
      const unreachable = createVerifier({
        partnerKey,
        apiUrl: `http://127.0.0.1:${await freePort()}`,
        onError: (fault) => faults.push(fault),
      });
      const down = await unreachable.authorizeCapability?.(await agent.jwt(), "send_invoice", {});
      assert.equal(down?.ok === false && down.status, 503);
      assert.equal(down?.ok === false && down.error, "temporarily_unavailable");
      await unreachable.authorizeCapability?.(await agent.jwt(), "send_invoice", {});
      assert.deepEqual(
        faults.map((fault) => fault.code),
        ["network_error"],
        "told once",
      );
      const stranger = createVerifier({
        partnerKey: `apk_${"x".repeat(43)}`,
        apiUrl: identity.url,
        onError: (fault) => faults.push(fault),
      });
      const refusedKey = await stranger.authorizeCapability?.(
        await agent.jwt(),
        "send_invoice",
        {},
      );
      assert.equal(refusedKey?.ok === false && refusedKey.status, 503);
      assert.equal(faults.at(-1)?.code, "partner_key_invalid");
      // Declaring is the partner's own act: AgentPass's refusal of it comes back as it is.
      const declared = await stranger.declareCapabilities?.([SEND]);
      assert.equal(declared?.ok === false && declared.error, "partner_key_invalid");
    });
  });
}
