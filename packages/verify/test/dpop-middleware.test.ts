import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import express from "express";
import { Hono } from "hono";
import { agentPassAuth as expressAuth } from "../src/express.ts";
import { type AgentPassVariables, agentPassAuth as honoAuth } from "../src/hono.ts";
import { authenticate, createVerifier, failureHeaders, type Verifier } from "../src/index.ts";
import { type Received, recordingService } from "./support/recording-service.ts";

/**
 * What the middlewares forward of a request under the DPoP scheme, and how they answer the proof
 * verdicts, against a recording service standing where AgentPass would (it answers a proof
 * `bad…` as refused and the token `aps_bound` without a proof as needing one).
 */

const TYPO = `Invalid DPoP proof: The DPoP proof's typ must be "dpop+jwt"`;
const BOUND = "This session token is bound to a key: send its DPoP proof";
const CONFLICT = {
  error: "Two different session tokens: send one, as Authorization: Bearer or x-session-token",
  code: "invalid_request",
};

function agentPass(received: Received) {
  const { sessionToken, dpop } = JSON.parse(received.body);
  if (dpop?.proof?.startsWith("bad")) {
    return { status: 401, body: { error: TYPO, code: "session_token_proof_invalid" } };
  }
  if (sessionToken === "aps_bound" && !dpop) {
    return { status: 401, body: { error: BOUND, code: "session_token_proof_required" } };
  }
  return { status: 200, body: { email: "ada@example.com" } };
}

describe("the middlewares under the DPoP scheme", () => {
  let service: Awaited<ReturnType<typeof recordingService>>;
  let verifier: Verifier;

  before(async () => {
    service = await recordingService(agentPass);
    verifier = createVerifier({ partnerKey: "apk_x", apiUrl: service.url });
  });
  after(() => service.server.close());

  /** What the last call to AgentPass asked about. */
  const lastAsked = () => JSON.parse(service.received.at(-1)?.body ?? "null");

  const honoApp = (publicUrl?: string) =>
    new Hono<{ Variables: AgentPassVariables }>()
      .use(honoAuth(verifier, publicUrl === undefined ? {} : { publicUrl }))
      .all("/api/*", (c) => c.json({ email: c.var.agentpassEmail }));

  it("Hono forwards the proof with the method and the URL called, without its query", async () => {
    const response = await honoApp().request("http://partner.example:8080/api/notes?page=2", {
      method: "POST",
      headers: { authorization: "DPoP aps_t", dpop: "pr00f" },
    });
    assert.deepEqual(await response.json(), { email: "ada@example.com" });
    assert.deepEqual(lastAsked(), {
      sessionToken: "aps_t",
      dpop: { proof: "pr00f", method: "POST", url: "http://partner.example:8080/api/notes" },
    });
  });

  it("Hono names the URL from publicUrl behind a proxy, path and all", async () => {
    await honoApp("https://api.example.com/notes-app/").request("http://10.0.0.7:3000/api/me", {
      headers: { authorization: "dpop aps_t", dpop: "pr00f" },
    });
    assert.deepEqual(lastAsked().dpop, {
      proof: "pr00f",
      method: "GET",
      url: "https://api.example.com/notes-app/api/me",
    });
  });

  it("forwards no proof for Bearer or x-session-token, and none when the DPoP header is missing", async () => {
    const app = honoApp();
    const sent: Record<string, string>[] = [
      { authorization: "Bearer aps_t", dpop: "pr00f" },
      { "x-session-token": "aps_t", dpop: "pr00f" },
      { authorization: "DPoP aps_t" },
    ];
    for (const headers of sent) {
      const response = await app.request("/api/me", { headers });
      assert.equal(response.status, 200, JSON.stringify(headers));
      assert.deepEqual(lastAsked(), { sessionToken: "aps_t" }, JSON.stringify(headers));
    }
  });

  it("takes one token in Authorization: DPoP and x-session-token, and refuses two", async () => {
    const app = honoApp();
    const same = await app.request("/api/me", {
      headers: { authorization: "DPoP aps_t", "x-session-token": "aps_t", dpop: "pr00f" },
    });
    assert.equal(same.status, 200);
    assert.equal(lastAsked().dpop.proof, "pr00f");
    const asked = service.received.length;
    const two = await app.request("/api/me", {
      headers: { authorization: "DPoP aps_t", "x-session-token": "aps_other", dpop: "pr00f" },
    });
    assert.equal(two.status, 400);
    assert.deepEqual(await two.json(), CONFLICT);
    assert.equal(service.received.length, asked, "nothing asked of AgentPass");
  });

  it("answers the proof verdicts 401 with a DPoP challenge naming the check", async () => {
    const app = honoApp();
    const refused = await app.request("/api/me", {
      headers: { authorization: "DPoP aps_t", dpop: "bad-proof" },
    });
    assert.equal(refused.status, 401);
    assert.equal(
      refused.headers.get("www-authenticate"),
      `DPoP error="invalid_dpop_proof", error_description="Invalid DPoP proof: The DPoP proof's typ must be 'dpop+jwt'", algs="ES256 EdDSA"`,
    );
    assert.deepEqual(await refused.json(), { error: TYPO, code: "session_token_proof_invalid" });

    for (const headers of [
      { authorization: "Bearer aps_bound" },
      { authorization: "DPoP aps_bound" },
    ]) {
      const required = await app.request("/api/me", { headers });
      assert.equal(required.status, 401);
      assert.equal(
        required.headers.get("www-authenticate"),
        `DPoP error="invalid_token", error_description="${BOUND}", algs="ES256 EdDSA"`,
      );
      assert.deepEqual(await required.json(), {
        error: BOUND,
        code: "session_token_proof_required",
      });
    }
    // The other 401s keep their Bearer challenge.
    const missing = await app.request("/api/me");
    assert.equal(
      missing.headers.get("www-authenticate"),
      'Bearer, AgentPass-Session header="x-session-token"',
    );
  });

  it("answers a proof longer than AgentPass reads 401 invalid_dpop_proof, asking nothing", async () => {
    const asked = service.received.length;
    const response = await honoApp().request("/api/me", {
      headers: { authorization: "DPoP aps_t", dpop: "x".repeat(8193) },
    });
    assert.equal(response.status, 401);
    assert.match(
      String(response.headers.get("www-authenticate")),
      /^DPoP error="invalid_dpop_proof"/,
    );
    assert.equal(((await response.json()) as { code: string }).code, "session_token_proof_invalid");
    assert.equal(service.received.length, asked);
  });

  describe("Express", () => {
    /** An Express app with the middleware under /api, on a loopback port. */
    async function serve(publicUrl?: string) {
      const app = express();
      app.use("/api", expressAuth(verifier, publicUrl === undefined ? {} : { publicUrl }));
      app.all("/api/*path", (req, res) => {
        res.json({ email: req.agentpassEmail });
      });
      const server = app.listen(0, "127.0.0.1");
      await new Promise((resolve) => server.once("listening", resolve));
      return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    }

    it("forwards the proof with the URL called, its mount point included and its query not", async () => {
      const { server, url } = await serve();
      try {
        const response = await fetch(`${url}/api/notes/7?x=1`, {
          method: "DELETE",
          headers: { authorization: "DPoP aps_t", dpop: "pr00f" },
        });
        assert.deepEqual(await response.json(), { email: "ada@example.com" });
        assert.deepEqual(lastAsked().dpop, {
          proof: "pr00f",
          method: "DELETE",
          url: `${url}/api/notes/7`,
        });
        await fetch(`${url}/api/me`, { headers: { authorization: "Bearer aps_t", dpop: "pr00f" } });
        assert.deepEqual(lastAsked(), { sessionToken: "aps_t" });
      } finally {
        server.close();
      }
    });

    it("names the URL from publicUrl, and answers a refused proof with its challenge", async () => {
      const { server, url } = await serve("https://api.example.com");
      try {
        await fetch(`${url}/api/me`, { headers: { authorization: "DPoP aps_t", dpop: "pr00f" } });
        assert.equal(lastAsked().dpop.url, "https://api.example.com/api/me");
        const refused = await fetch(`${url}/api/me`, {
          headers: { authorization: "DPoP aps_t", dpop: "bad" },
        });
        assert.equal(refused.status, 401);
        assert.match(
          String(refused.headers.get("www-authenticate")),
          /^DPoP error="invalid_dpop_proof", error_description="[^"]+", algs="ES256 EdDSA"$/,
        );
        assert.deepEqual(await refused.json(), {
          error: TYPO,
          code: "session_token_proof_invalid",
        });
      } finally {
        server.close();
      }
    });
  });

  it("authenticate() forwards the proof of a Fetch Request, with publicUrl when given", async () => {
    const request = () =>
      new Request("http://internal:8080/api/me?q=1", {
        method: "PATCH",
        headers: { authorization: "DPoP aps_t", dpop: "pr00f" },
      });
    assert.deepEqual(await authenticate(verifier, request()), {
      ok: true,
      email: "ada@example.com",
    });
    assert.equal(lastAsked().dpop.url, "http://internal:8080/api/me");
    assert.equal(lastAsked().dpop.method, "PATCH");
    await authenticate(verifier, request(), {}, { publicUrl: "https://api.example.com" });
    assert.equal(lastAsked().dpop.url, "https://api.example.com/api/me");
    const refused = await authenticate(
      verifier,
      new Request("http://internal/", { headers: { authorization: "DPoP aps_t", dpop: "bad" } }),
    );
    assert.deepEqual(refused, {
      ok: false,
      status: 401,
      error: TYPO,
      code: "session_token_proof_invalid",
    });
    assert.deepEqual(failureHeaders(401, "session_token_proof_required"), {
      "WWW-Authenticate": 'DPoP error="invalid_token", algs="ES256 EdDSA"',
    });
  });

  it("takes an empty publicUrl for none, as an unset variable gives", async () => {
    await honoApp("").request("http://partner.example/api/me", {
      headers: { authorization: "DPoP aps_t", dpop: "pr00f" },
    });
    assert.equal(lastAsked().dpop.url, "http://partner.example/api/me");
  });

  it("refuses a publicUrl that is not an http(s) URL when the middleware is made", () => {
    for (const publicUrl of [
      "api.example.com",
      "ftp://api.example.com",
      "https://api.example/?a=1",
    ]) {
      assert.throws(() => honoAuth(verifier, { publicUrl }), TypeError, publicUrl);
      assert.throws(() => expressAuth(verifier, { publicUrl }), TypeError, publicUrl);
    }
  });
});
