import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { Hono } from "hono";
import { agentPassAuth as connectAuth } from "../src/express.ts";
import { type AgentPassVariables, agentPassAuth as honoAuth } from "../src/hono.ts";
import { authenticate, createVerifier, type Verifier } from "../src/index.ts";

describe("authenticate() and the middlewares", () => {
  let identity: TestIdentityService;
  let verifier: Verifier;
  let revokedVerifier: Verifier;
  let downVerifier: Verifier;
  let token: string;

  before(async () => {
    identity = await startTestIdentityService();
    const { key: userKey } = await identity.createUserKey("mw@example.com");
    const partner = await identity.createPartner({
      name: "MW",
      ownerEmail: "mw-owner@example.com",
    });
    const live = await identity.createPartnerKey(partner.id);
    const revoked = await identity.createPartnerKey(partner.id);
    await identity.revokePartnerKey(revoked.id);
    verifier = createVerifier({ partnerKey: live.key, apiUrl: identity.url });
    revokedVerifier = createVerifier({ partnerKey: revoked.key, apiUrl: identity.url });
    downVerifier = createVerifier({ partnerKey: live.key, apiUrl: "http://127.0.0.1:9" });
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
    });
    token = ((await response.json()) as { sessionToken: string }).sessionToken;
  });
  after(() => identity.close());

  const request = (value?: string) =>
    new Request("http://partner.example/api/me", {
      headers: value === undefined ? {} : { "x-session-token": value },
    });

  it("answers no token 401, a rejected token 401, and AgentPass down or refusing the partner key 503", async () => {
    assert.deepEqual(await authenticate(verifier, request(token)), {
      ok: true,
      email: "mw@example.com",
    });
    assert.deepEqual(await authenticate(verifier, token), { ok: true, email: "mw@example.com" });
    for (const missing of [request(), request(""), null, undefined, ""]) {
      assert.deepEqual(await authenticate(verifier, missing), {
        ok: false,
        status: 401,
        error: "Missing session token",
        code: "session_token_missing",
      });
    }
    assert.deepEqual(await authenticate(verifier, request("aps_bad")), {
      ok: false,
      status: 401,
      error: "Invalid or expired session token",
      code: "session_token_invalid",
    });
    const unavailable = {
      ok: false,
      status: 503,
      error: "Identity service unavailable",
      code: "identity_unavailable",
    };
    // `cause` tells the partner's logs what failed; the answer's body never carries it.
    assert.deepEqual(await authenticate(revokedVerifier, request(token)), {
      ...unavailable,
      cause: "partner_key_revoked",
    });
    assert.deepEqual(await authenticate(downVerifier, request(token)), {
      ...unavailable,
      cause: "network_error",
    });
    const badKey = createVerifier({ partnerKey: "apk_nope", apiUrl: identity.url });
    const refused = await authenticate(badKey, request(token));
    assert.deepEqual({ ...refused, cause: undefined }, { ...unavailable, cause: undefined });
    assert.match(String((refused as { cause?: string }).cause), /^partner_key/);
  });

  it("Hono middleware sets the email, or answers 401 / 503 with Retry-After", async () => {
    const app = (v: Verifier) =>
      new Hono<{ Variables: AgentPassVariables }>()
        .use(honoAuth(v))
        .get("/me", (c) => c.json({ email: c.var.agentpassEmail }));
    const ok = await app(verifier).request("/me", { headers: { "x-session-token": token } });
    assert.deepEqual(await ok.json(), { email: "mw@example.com" });
    const missing = await app(verifier).request("/me");
    assert.equal(missing.status, 401);
    assert.equal(
      missing.headers.get("www-authenticate"),
      'Bearer, AgentPass-Session header="x-session-token"',
    );
    assert.deepEqual(await missing.json(), {
      error: "Missing session token",
      code: "session_token_missing",
    });
    const down = await app(downVerifier).request("/me", { headers: { "x-session-token": token } });
    assert.equal(down.status, 503);
    assert.equal(down.headers.get("retry-after"), "5");
    assert.deepEqual(await down.json(), {
      error: "Identity service unavailable",
      code: "identity_unavailable",
    });
  });

  it("Express/Connect middleware sets req.agentpassEmail, or answers JSON errors", async () => {
    const serve = (v: Verifier) => {
      const auth = connectAuth(v);
      return createServer((req, res) => {
        auth(req as IncomingMessage & { agentpassEmail?: string }, res, () => {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ email: (req as { agentpassEmail?: string }).agentpassEmail }));
        });
      });
    };
    for (const [v, sent, status, body] of [
      [verifier, token, 200, { email: "mw@example.com" }],
      [
        verifier,
        "aps_bad",
        401,
        { error: "Invalid or expired session token", code: "session_token_invalid" },
      ],
      [
        downVerifier,
        token,
        503,
        { error: "Identity service unavailable", code: "identity_unavailable" },
      ],
    ] as const) {
      const server = serve(v);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const port = (server.address() as AddressInfo).port;
        const response = await fetch(`http://127.0.0.1:${port}/me`, {
          headers: { "x-session-token": sent },
        });
        assert.equal(response.status, status);
        assert.equal(
          response.headers.get("www-authenticate"),
          status === 401
            ? 'Bearer error="invalid_token", AgentPass-Session header="x-session-token"'
            : null,
        );
        assert.deepEqual(await response.json(), body);
      } finally {
        server.close();
      }
    }
  });
  describe("with the token as Authorization: Bearer (RFC 6750), as OAuth and MCP clients send it", () => {
    const CONFLICT = {
      error: "Two different session tokens: send one, as Authorization: Bearer or x-session-token",
      code: "invalid_request",
    };
    const headersOf = (sent: { bearer?: string; header?: string }) => ({
      ...(sent.bearer === undefined ? {} : { authorization: `Bearer ${sent.bearer}` }),
      ...(sent.header === undefined ? {} : { "x-session-token": sent.header }),
    });
    /** Every way a request can carry the token, and the answer each middleware must give. */
    const cases = () =>
      [
        [{ bearer: token }, 200, { email: "mw@example.com" }],
        [{ bearer: token, header: token }, 200, { email: "mw@example.com" }],
        [{ bearer: "aps_other", header: token }, 400, CONFLICT],
        [
          { bearer: "aps_bad" },
          401,
          { error: "Invalid or expired session token", code: "session_token_invalid" },
        ],
      ] as const;

    it("authenticate() takes it from a Request, and answers 400 for two different tokens", async () => {
      const auth = (sent: { bearer?: string; header?: string }) =>
        authenticate(
          verifier,
          new Request("http://partner.example/api/me", { headers: headersOf(sent) }),
        );
      assert.deepEqual(await auth({ bearer: token }), { ok: true, email: "mw@example.com" });
      assert.deepEqual(await auth({ bearer: token, header: token }), {
        ok: true,
        email: "mw@example.com",
      });
      assert.deepEqual(await auth({ bearer: "aps_other", header: token }), {
        ok: false,
        status: 400,
        ...CONFLICT,
      });
      // Another scheme (the partner's own Basic auth, say) is not a session token.
      const basic = await authenticate(
        verifier,
        new Request("http://partner.example/", { headers: { authorization: "Basic dXNlcg==" } }),
      );
      assert.equal(basic.ok ? "ok" : basic.code, "session_token_missing");
    });

    it("the Hono middleware takes it, and answers 400 with a Bearer challenge for two", async () => {
      const app = new Hono<{ Variables: AgentPassVariables }>()
        .use(honoAuth(verifier))
        .get("/me", (c) => c.json({ email: c.var.agentpassEmail }));
      for (const [sent, status, body] of cases()) {
        const response = await app.request("/me", { headers: headersOf(sent) });
        assert.equal(response.status, status, JSON.stringify(sent));
        assert.deepEqual(await response.json(), body);
        if (status === 400) {
          assert.equal(
            response.headers.get("www-authenticate"),
            'Bearer error="invalid_request", AgentPass-Session header="x-session-token"',
          );
        }
      }
    });

    it("the Express/Connect middleware takes it, and answers 400 for two", async () => {
      const auth = connectAuth(verifier);
      const server = createServer((req, res) => {
        auth(req as IncomingMessage & { agentpassEmail?: string }, res, () => {
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify({ email: (req as { agentpassEmail?: string }).agentpassEmail }));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const port = (server.address() as AddressInfo).port;
        for (const [sent, status, body] of cases()) {
          const response = await fetch(`http://127.0.0.1:${port}/me`, { headers: headersOf(sent) });
          assert.equal(response.status, status, JSON.stringify(sent));
          assert.deepEqual(await response.json(), body);
        }
      } finally {
        server.close();
      }
    });
  });
});
