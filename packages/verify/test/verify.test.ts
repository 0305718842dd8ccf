import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { createVerifier, MAX_CACHE_TTL_MS, NETWORK_ERROR, verify } from "../src/index.ts";
import { closedPortUrl, fakeService } from "./support/loopback.ts";

describe("verify() against the real identity service", () => {
  let identity: TestIdentityService;
  let now = Date.UTC(2026, 10, 23, 12);
  let partnerKey: string;
  let userKey: string;

  before(async () => {
    identity = await startTestIdentityService({ clock: () => now });
    userKey = (await identity.createUserKey("Lib.User@Example.com")).key;
    const partner = await identity.createPartner({ name: "Lib", ownerEmail: "owner@example.com" });
    partnerKey = (await identity.createPartnerKey(partner.id)).key;
  });
  after(() => identity.close());

  async function mint(): Promise<string> {
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
    });
    return ((await response.json()) as { sessionToken: string }).sessionToken;
  }

  it("returns ok with the canonical email, the status and the expiry", async () => {
    const result = await verify(partnerKey, await mint(), identity.url);
    assert.deepEqual(result, {
      ok: true,
      email: "lib.user@example.com",
      status: 200,
      expiresAt: new Date(now + 300_000),
    });
  });

  it("accepts an apiUrl with a trailing slash", async () => {
    const result = await verify(partnerKey, await mint(), `${identity.url}/`);
    assert.equal(result.ok, true);
  });

  it("passes the service's error through for a bad token (401)", async () => {
    assert.deepEqual(await verify(partnerKey, "aps_nope", identity.url), {
      ok: false,
      error: "Invalid or expired session token",
      code: "session_token_invalid",
      status: 401,
    });
  });

  it("reports an expired token as the service does", async () => {
    const token = await mint();
    now += 300_000;
    assert.deepEqual(await verify(partnerKey, token, identity.url), {
      ok: false,
      error: "Invalid or expired session token",
      code: "session_token_invalid",
      status: 401,
    });
  });

  it("reports an unknown partner key (401)", async () => {
    const result = await verify("apk_unknown", await mint(), identity.url);
    assert.deepEqual(result, {
      ok: false,
      error: "Invalid partner key",
      status: 401,
      code: "partner_key_invalid",
    });
  });

  it("refuses an empty partner key or token without a request, with the service's words", async () => {
    const url = await closedPortUrl(); // a request would give the network error instead
    assert.deepEqual(await verify("", "aps_x", url), {
      ok: false,
      error: "Missing partner key",
      code: "partner_key_missing",
      status: 401,
    });
    assert.deepEqual(await verify(partnerKey, "", url), {
      ok: false,
      error: "Missing or invalid sessionToken",
      code: "session_token_field_invalid",
      status: 400,
    });
  });

  it("tells a revoked partner key (403) from a bad token", async () => {
    const partner = await identity.createPartner({ name: "Gone", ownerEmail: "gone@example.com" });
    const key = await identity.createPartnerKey(partner.id);
    await identity.revokePartnerKey(key.id);
    assert.deepEqual(await verify(key.key, await mint(), identity.url), {
      ok: false,
      error: "Partner key has been revoked",
      code: "partner_key_revoked",
      status: 403,
    });
  });

  describe("createVerifier with a cache", () => {
    it("keys its cache by a WebCrypto digest where node:crypto is not offered (edge runtimes)", async () => {
      const offered = process.getBuiltinModule;
      Reflect.deleteProperty(process, "getBuiltinModule");
      let edge: typeof import("../src/create-verifier.ts");
      try {
        // A fresh instance of the module, evaluated while the runtime offers no node:crypto.
        edge = await import(`../src/create-verifier.ts?edge=${Date.now()}`);
      } finally {
        process.getBuiltinModule = offered;
      }
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls++;
        return fetch(input, init);
      };
      const partner = await identity.createPartner({ name: "E", ownerEmail: "e@example.com" });
      const key = await identity.createPartnerKey(partner.id);
      const verifier = edge.createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        cacheTtlMs: 30_000,
        now: () => now,
        fetch: counting,
      });
      const first = await mint();
      const second = await mint();
      for (const token of [first, second, first, second]) {
        assert.equal((await verifier.verify(token)).ok, true);
      }
      assert.equal(calls, 2, "one call per distinct token, the repeats from the cache");
    });

    it("reuses a success for at most cacheTtlMs, and never a failure", async () => {
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls++;
        return fetch(input, init);
      };
      const partner = await identity.createPartner({ name: "C", ownerEmail: "c@example.com" });
      const key = await identity.createPartnerKey(partner.id);
      const verifier = createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        cacheTtlMs: 3_000,
        now: () => now,
        fetch: counting,
      });
      const token = await mint();
      assert.equal((await verifier.verify(token)).ok, true);
      assert.equal((await verifier.verify(token)).ok, true);
      assert.equal(calls, 1, "the second success came from the cache");

      await identity.revokePartnerKey(key.id);
      now += 2_999;
      assert.equal((await verifier.verify(token)).ok, true, "still cached inside the TTL");
      now += 1;
      assert.deepEqual(await verifier.verify(token), {
        ok: false,
        error: "Partner key has been revoked",
        code: "partner_key_revoked",
        status: 403,
      });
      await verifier.verify(token);
      assert.equal(calls, 3, "failures are asked again every time");
    });

    it("asks once for concurrent verifications of a token it has not cached", async () => {
      let calls = 0;
      const counting: typeof fetch = (input, init) => {
        calls++;
        return fetch(input, init);
      };
      const partner = await identity.createPartner({ name: "S", ownerEmail: "s@example.com" });
      const key = await identity.createPartnerKey(partner.id);
      const cached = createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        cacheTtlMs: 5_000,
        now: () => now,
        fetch: counting,
      });
      const token = await mint();
      const results = await Promise.all(Array.from({ length: 20 }, () => cached.verify(token)));
      assert.ok(results.every((result) => result.ok));
      assert.equal(calls, 1, "the 20 callers shared one request");

      now += 5_000;
      await Promise.all(Array.from({ length: 20 }, () => cached.verify(token)));
      assert.equal(calls, 2, "once the entry lapsed, again one request for all");

      const forged = `aps_${"x".repeat(40)}`;
      const refused = await Promise.all(Array.from({ length: 5 }, () => cached.verify(forged)));
      assert.ok(refused.every((result) => result.status === 401));
      assert.equal(calls, 3, "a refusal is shared by the callers waiting for it");
      await cached.verify(forged);
      assert.equal(calls, 4, "and not kept after");

      calls = 0;
      const uncached = createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        fetch: counting,
      });
      await Promise.all(Array.from({ length: 5 }, () => uncached.verify(token)));
      assert.equal(calls, 5, "without a cache every call asks, so a revocation holds on the next");
    });

    it("lets a revocation reach the partner within 5 s, whatever cacheTtlMs asks", async () => {
      const partner = await identity.createPartner({ name: "L", ownerEmail: "l@example.com" });
      const key = await identity.createPartnerKey(partner.id);
      const verifier = createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        cacheTtlMs: 60_000,
        now: () => now,
      });
      const token = await mint();
      assert.equal((await verifier.verify(token)).ok, true);
      await identity.revokePartnerKey(key.id);
      assert.equal(MAX_CACHE_TTL_MS, 5_000);
      now += 4_999;
      assert.equal((await verifier.verify(token)).ok, true, "cached for up to 5 s");
      now += 1;
      assert.equal((await verifier.verify(token)).status, 403, "5 s after the revocation");
    });

    it("never keeps a success past the token's own expiry", async () => {
      const partner = await identity.createPartner({ name: "E", ownerEmail: "e@example.com" });
      const key = await identity.createPartnerKey(partner.id);
      const verifier = createVerifier({
        partnerKey: key.key,
        apiUrl: identity.url,
        cacheTtlMs: 3_600_000,
        now: () => now,
      });
      const token = await mint();
      assert.equal((await verifier.verify(token)).ok, true);
      now += 300_000;
      assert.equal((await verifier.verify(token)).ok, false);
    });
  });
});

describe("verify() when the service misbehaves", () => {
  it("never throws, whatever the arguments", async () => {
    const weird: unknown[] = [undefined, null, 42, {}, [], Symbol("x"), "", "::::", "ftp://x"];
    for (const a of weird) {
      for (const b of weird) {
        const result = await verify(a, b, "http://[::1");
        assert.equal(result.ok, false);
      }
      const result = await verify("apk_x", "aps_x", a);
      assert.equal(result.ok, false);
    }
    assert.deepEqual(await verify("apk_x", "aps_x", "not a url"), {
      ok: false,
      error: "Invalid apiUrl: expected an http(s) URL",
      code: "invalid_api_url",
      status: 0,
    });
  });

  it("gives the network error for a closed port", async () => {
    assert.deepEqual(await verify("apk_x", "aps_x", await closedPortUrl()), {
      ok: false,
      error: NETWORK_ERROR,
      code: "network_error",
      status: 0,
    });
    assert.equal(NETWORK_ERROR, "Network error: cannot reach API");
  });

  it("gives the network error when the service hangs past the timeout", async () => {
    const { url, server } = await fakeService(() => {}); // never answers
    try {
      const verifier = createVerifier({ partnerKey: "apk_x", apiUrl: url, timeoutMs: 200 });
      assert.deepEqual(await verifier.verify("aps_x"), {
        ok: false,
        error: NETWORK_ERROR,
        code: "network_error",
        status: 0,
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("names the status when the answer is not the service's JSON", async () => {
    const { url, server } = await fakeService((_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>Bad gateway</html>");
    });
    try {
      assert.deepEqual(await verify("apk_x", "aps_x", url), {
        ok: false,
        error: "Unexpected response from AgentPass (HTTP 502)",
        code: "unexpected_response",
        status: 502,
      });
    } finally {
      server.close();
    }
  });

  it("passes a 500's error text through", async () => {
    const { url, server } = await fakeService((_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "Internal server error", requestId: "r1" }));
    });
    try {
      assert.deepEqual(await verify("apk_x", "aps_x", url), {
        ok: false,
        error: "Internal server error",
        code: "unexpected_response",
        status: 500,
      });
    } finally {
      server.close();
    }
  });

  it("does not take a 200 without an email as a success", async () => {
    const { url, server } = await fakeService((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
    try {
      assert.deepEqual(await verify("apk_x", "aps_x", url), {
        ok: false,
        error: "Unexpected response from AgentPass (HTTP 200)",
        code: "unexpected_response",
        status: 200,
      });
    } finally {
      server.close();
    }
  });
});
