import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, freePort, testEngines } from "@agentpass/db/testing";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import express from "express";
import { Hono } from "hono";
import { createDpopKey, type DpopKey, dpopHeaders, dpopProof } from "../src/dpop.ts";
import { agentPassAuth as expressAuth } from "../src/express.ts";
import { type AgentPassVariables, agentPassAuth as honoAuth } from "../src/hono.ts";
import {
  type AuthOptions,
  createVerifier,
  introspect,
  type Verifier,
  verify,
} from "../src/index.ts";

/**
 * A session token bound to an agent's key, from the real identity service, sent to an Express
 * and a Hono partner using the middlewares: each request with a fresh proof passes; the token
 * without one, a proof replayed, a proof for another URL or by another key are refused with the
 * documented code and challenge.
 */

const REQUIRED = {
  error: "This session token is bound to a key: send its DPoP proof",
  code: "session_token_proof_required",
};
const CHALLENGE_REQUIRED = `DPoP error="invalid_token", error_description="${REQUIRED.error}", algs="ES256 EdDSA"`;

/** The 401 of a proof that fails `check`, and its challenge. */
function refusedFor(check: string) {
  const error = `Invalid DPoP proof: ${check}`;
  return {
    body: { error, code: "session_token_proof_invalid" },
    challenge: `DPoP error="invalid_dpop_proof", error_description="${error}", algs="ES256 EdDSA"`,
  };
}
const REPLAYED = refusedFor("The DPoP proof was used already (its jti)");
const OTHER_URL = refusedFor("The DPoP proof's htu is not this URL");
const OTHER_KEY = refusedFor("The DPoP proof is signed by another key than the token's");

/** A partner app: `call` sends one request to its `/api/me` and gives the answer. */
interface Partner {
  /** The URL an agent calls (the public one when the app is given `publicUrl`). */
  url: string;
  call(headers: Record<string, string>, to?: string): Promise<Response>;
  close(): void;
}

async function expressPartner(verifier: Verifier, options: AuthOptions = {}): Promise<Partner> {
  const app = express();
  app.use("/api", expressAuth(verifier, options));
  app.get("/api/me", (req, res) => {
    res.json({ email: req.agentpassEmail });
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${options.publicUrl ?? origin}/api/me`,
    call: (headers, to = `${origin}/api/me`) => fetch(to, { headers }),
    close: () => server.close(),
  };
}

function honoPartner(verifier: Verifier, options: AuthOptions = {}): Partner {
  const app = new Hono<{ Variables: AgentPassVariables }>()
    .use("/api/*", honoAuth(verifier, options))
    .get("/api/me", (c) => c.json({ email: c.var.agentpassEmail }));
  const origin = "http://notes.partner.test";
  return {
    url: `${options.publicUrl ?? origin}/api/me`,
    call: async (headers, to = `${origin}/api/me`) => app.request(to, { headers }),
    close: () => {},
  };
}

async function expectRefusal(
  response: Response,
  expected: { body: { error: string; code: string }; challenge: string },
) {
  assert.equal(response.status, 401);
  assert.equal(response.headers.get("www-authenticate"), expected.challenge);
  assert.deepEqual(await response.json(), expected.body);
}

for (const engine of testEngines()) {
  describe(`a DPoP-bound session token at a partner using the middlewares (${engine})`, () => {
    let identity: TestIdentityService;
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let userKey: string;
    let verifier: Verifier;
    let partnerKey: string;
    let agentKey: DpopKey;

    before(async () => {
      database = await createTestDatabase(engine);
      // A proof at /api/session-tokens names PUBLIC_URL: the service is started on its port.
      const port = await freePort();
      identity = await startTestIdentityService({
        port,
        databaseUrl: database.databaseUrl,
        env: { PUBLIC_URL: `http://127.0.0.1:${port}` },
      });
      userKey = (await identity.createUserKey("Bound.Agent@Example.com")).key;
      const partner = await identity.createPartner({ name: "DPoP", ownerEmail: "p@example.com" });
      partnerKey = (await identity.createPartnerKey(partner.id)).key;
      // A cache, to show that no answer got with a proof is served from it.
      verifier = createVerifier({ partnerKey, apiUrl: identity.url, cacheTtlMs: 5_000 });
      agentKey = await createDpopKey();
    });
    after(async () => {
      await identity.close();
      await database.drop();
    });

    /** A session token minted with a proof by `key`, as the agent's library or CLI would. */
    async function mintBound(key: DpopKey): Promise<string> {
      const url = `${identity.url}/api/session-tokens`;
      const response = await fetch(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${userKey}`,
          dpop: await dpopProof(key, { method: "POST", url }),
        },
      });
      assert.equal(response.status, 201);
      const minted = (await response.json()) as { sessionToken: string; tokenType?: string };
      assert.equal(minted.tokenType, "DPoP");
      return minted.sessionToken;
    }

    for (const [name, start] of [
      ["Express", expressPartner],
      ["Hono", honoPartner],
    ] as const) {
      describe(`${name}`, () => {
        let partner: Partner;
        let token: string;
        before(async () => {
          partner = await start(verifier);
          token = await mintBound(agentKey);
        });
        after(() => partner.close());

        it("lets in each request with a fresh proof of the agent's key", async () => {
          for (let i = 0; i < 3; i++) {
            const response = await partner.call(
              await dpopHeaders(agentKey, token, "GET", partner.url),
            );
            assert.equal(response.status, 200);
            assert.deepEqual(await response.json(), { email: "bound.agent@example.com" });
          }
        });

        it("refuses the token without its proof: as Bearer, in x-session-token, or under DPoP alone", async () => {
          const sent: Record<string, string>[] = [
            { authorization: `Bearer ${token}` },
            { "x-session-token": token },
            { authorization: `DPoP ${token}` },
          ];
          for (const headers of sent) {
            await expectRefusal(await partner.call(headers), {
              body: REQUIRED,
              challenge: CHALLENGE_REQUIRED,
            });
          }
        });

        it("refuses a proof replayed, one for another URL, and one by another key", async () => {
          const headers = await dpopHeaders(agentKey, token, "GET", partner.url);
          assert.equal((await partner.call(headers)).status, 200);
          await expectRefusal(await partner.call(headers), REPLAYED);

          const elsewhere = `${new URL(partner.url).origin}/api/notes`;
          await expectRefusal(
            await partner.call(await dpopHeaders(agentKey, token, "GET", elsewhere)),
            OTHER_URL,
          );
          const thief = await createDpopKey();
          await expectRefusal(
            await partner.call(await dpopHeaders(thief, token, "GET", partner.url)),
            OTHER_KEY,
          );
        });
      });
    }

    it("refuses at one partner a proof accepted at another: the jti is spent centrally", async () => {
      // Both behind proxies with one public URL, so the proof names the same htu at each.
      const options = { publicUrl: "https://api.partner.example" };
      const first = await expressPartner(verifier, options);
      const second = honoPartner(createVerifier({ partnerKey, apiUrl: identity.url }), options);
      try {
        assert.equal(first.url, "https://api.partner.example/api/me");
        const token = await mintBound(agentKey);
        const headers = await dpopHeaders(agentKey, token, "GET", first.url);
        assert.equal((await first.call(headers)).status, 200);
        await expectRefusal(await second.call(headers), REPLAYED);
        const fresh = await second.call(await dpopHeaders(agentKey, token, "GET", second.url));
        assert.equal(fresh.status, 200);
      } finally {
        first.close();
      }
    });

    it("keeps an unbound token working as today, with or without a proof", async () => {
      const response = await fetch(`${identity.url}/api/session-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${userKey}` },
      });
      const unbound = ((await response.json()) as { sessionToken: string }).sessionToken;
      const partner = honoPartner(verifier);
      assert.equal((await partner.call({ authorization: `Bearer ${unbound}` })).status, 200);
      const proved = await dpopHeaders(agentKey, unbound, "GET", partner.url);
      assert.equal((await partner.call(proved)).status, 200);
    });

    it("verify() and introspect() check a proof forwarded by hand", async () => {
      const token = await mintBound(agentKey);
      const url = "https://api.partner.example/api/notes";
      const dpop = {
        proof: await dpopProof(agentKey, { method: "GET", url, accessToken: token }),
        method: "GET",
        url: `${url}?page=2`,
      };
      const ok = await verify(partnerKey, token, identity.url, { dpop });
      assert.equal(ok.ok ? ok.email : ok.code, "bound.agent@example.com");
      assert.deepEqual(await verify(partnerKey, token, identity.url, { dpop }), {
        ok: false,
        status: 401,
        ...REPLAYED.body,
      });
      assert.deepEqual(await verify(partnerKey, token, identity.url), {
        ok: false,
        status: 401,
        ...REQUIRED,
      });

      const options = { partnerKey, apiUrl: identity.url };
      const fresh = await dpopProof(agentKey, { method: "GET", url, accessToken: token });
      const active = await introspect(token, { ...options, dpop: { ...dpop, proof: fresh } });
      assert.equal(active.ok && active.jkt, agentKey.jkt, "cnf.jkt is the agent key's thumbprint");
      assert.equal(active.ok && active.email, "bound.agent@example.com");
      assert.deepEqual(await introspect(token, { ...options, dpop: { ...dpop, proof: fresh } }), {
        ok: false,
        status: 200,
        ...REPLAYED.body,
      });
      assert.deepEqual(await introspect(token, { ...options, dpop: { method: "GET", url } }), {
        ok: false,
        status: 200,
        ...REQUIRED,
      });
    });
  });
}
