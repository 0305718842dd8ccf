import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { createVerifier, introspect, NETWORK_ERROR, TOKEN_INACTIVE } from "../src/index.ts";
import { fakeService } from "./support/loopback.ts";

const INACTIVE = { ok: false, status: 200, error: "Token is not active", code: TOKEN_INACTIVE };

/** A fake AgentPass whose introspection answers `status` with `body`. */
function answering(status: number, body: string) {
  return fakeService((_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body);
  });
}

describe("introspect() against the real identity service", () => {
  let identity: TestIdentityService;
  const now = Date.UTC(2026, 10, 23, 12);
  let clock = now;
  let partner: { id: string };
  let partnerKey: string;
  let userKey: string;

  before(async () => {
    identity = await startTestIdentityService({ clock: () => clock });
    userKey = (await identity.createUserKey("Intro.User@Example.com")).key;
    partner = await identity.createPartner({ name: "Intro", ownerEmail: "owner@example.com" });
    partnerKey = (await identity.createPartnerKey(partner.id)).key;
  });
  after(() => identity.close());

  async function mint(audience?: string): Promise<string> {
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
      ...(audience !== undefined && { body: JSON.stringify({ audience }) }),
    });
    return ((await response.json()) as { sessionToken: string }).sessionToken;
  }

  it("tells whose an unbound token is, with no aud", async () => {
    clock = now;
    const result = await introspect(await mint(), { partnerKey, apiUrl: identity.url });
    assert.equal(result.ok, true);
    if (!result.ok) return;
    assert.equal(result.email, "intro.user@example.com");
    assert.equal(typeof result.sub, "string");
    assert.equal(result.aud, undefined);
    assert.equal(typeof result.issuer, "string"); // the service's PUBLIC_URL
    assert.deepEqual(result.issuedAt, new Date(now));
    assert.deepEqual(result.expiresAt, new Date(now + 300_000));
  });

  it("names the caller as aud for a token bound to it", async () => {
    const result = await introspect(await mint(partner.id), { partnerKey, apiUrl: identity.url });
    assert.equal(result.ok && result.aud, partner.id);
  });

  it("answers token_inactive for a token bound to another partner", async () => {
    const other = await identity.createPartner({ name: "Other", ownerEmail: "o@example.com" });
    const token = await mint(other.id);
    assert.deepEqual(await introspect(token, { partnerKey, apiUrl: identity.url }), INACTIVE);
  });

  it("answers token_inactive for a forged token and for an expired one", async () => {
    assert.deepEqual(
      await introspect("aps_forged", { partnerKey, apiUrl: identity.url }),
      INACTIVE,
    );
    clock = now;
    const token = await mint();
    clock = now + 299_999;
    assert.equal((await introspect(token, { partnerKey, apiUrl: identity.url })).ok, true);
    clock = now + 300_000;
    assert.deepEqual(await introspect(token, { partnerKey, apiUrl: identity.url }), INACTIVE);
    clock = now;
  });

  it("passes OAuth's invalid_client through for an unknown or revoked partner key (401)", async () => {
    const token = await mint();
    const unknown = await introspect(token, { partnerKey: "apk_unknown", apiUrl: identity.url });
    assert.equal(unknown.ok, false);
    assert.equal(!unknown.ok && unknown.code, "invalid_client");
    assert.equal(unknown.status, 401);
    const gone = await identity.createPartner({ name: "Gone", ownerEmail: "gone@example.com" });
    const key = await identity.createPartnerKey(gone.id);
    await identity.revokePartnerKey(key.id);
    const revoked = await introspect(token, { partnerKey: key.key, apiUrl: identity.url });
    assert.deepEqual(
      { status: revoked.status, code: !revoked.ok && revoked.code },
      { status: 401, code: "invalid_client" },
    );
  });

  it("is offered by createVerifier, which reports a refused partner key to onError once", async () => {
    const faults: string[] = [];
    const verifier = createVerifier({
      partnerKey: "apk_unknown",
      apiUrl: identity.url,
      onError: (fault) => faults.push(fault.code),
    });
    const token = await mint();
    await verifier.introspect?.(token);
    await verifier.introspect?.(token);
    assert.deepEqual(faults, ["partner_key_invalid"]);
    const working = createVerifier({ partnerKey, apiUrl: identity.url });
    const result = await working.introspect?.(await mint(partner.id));
    assert.equal(result?.ok && result.aud, partner.id);
  });
});

describe("introspect() when the arguments or the service misbehave", () => {
  it("never throws, whatever the arguments, and refuses without a request what cannot work", async () => {
    const weird: unknown[] = [undefined, null, 42, {}, [], "", "ftp://x"];
    for (const token of weird) {
      for (const options of weird) {
        const result = await introspect(token, options as never);
        assert.equal(result.ok, false);
      }
    }
    assert.deepEqual(await introspect("aps_x", { partnerKey: "apk_x", apiUrl: "not a url" }), {
      ok: false,
      error: "Invalid apiUrl: expected an http(s) URL",
      code: "invalid_api_url",
      status: 0,
    });
    assert.deepEqual(await introspect("aps_x", { partnerKey: "", apiUrl: "http://127.0.0.1:1" }), {
      ok: false,
      error: "Missing partner key",
      code: "partner_key_missing",
      status: 401,
    });
    assert.deepEqual(await introspect("", { partnerKey: "apk_x", apiUrl: "http://127.0.0.1:1" }), {
      ok: false,
      error: "Missing token",
      code: "invalid_request",
      status: 400,
    });
  });

  it("sends the token form-encoded with the partner key as Bearer", async () => {
    let seen: { headers: Record<string, unknown>; body: string; url: string } | undefined;
    const { url, server } = await fakeService((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        seen = { headers: req.headers, body, url: req.url ?? "" };
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"active":false}');
      });
    });
    try {
      assert.deepEqual(
        await introspect("aps_a+b/c=", { partnerKey: "apk_x", apiUrl: url }),
        INACTIVE,
      );
      assert.equal(seen?.url, "/oauth/introspect");
      assert.equal(seen?.headers.authorization, "Bearer apk_x");
      assert.equal(seen?.headers["content-type"], "application/x-www-form-urlencoded");
      assert.equal(new URLSearchParams(seen?.body).get("token"), "aps_a+b/c=");
    } finally {
      server.close();
    }
  });

  it("gives the network error for a closed port and past the time limit", async () => {
    const closed = await fakeService(() => {});
    await new Promise((resolve) => closed.server.close(resolve));
    const network = { ok: false, error: NETWORK_ERROR, code: "network_error", status: 0 };
    assert.deepEqual(
      await introspect("aps_x", { partnerKey: "apk_x", apiUrl: closed.url }),
      network,
    );
    const { url, server } = await fakeService(() => {}); // never answers
    try {
      assert.deepEqual(
        await introspect("aps_x", { partnerKey: "apk_x", apiUrl: url, timeoutMs: 200 }),
        network,
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("does not take an active answer without an email and a subject as a success", async () => {
    const { url, server } = await answering(200, '{"active":true,"email":"a@example.com"}');
    try {
      assert.deepEqual(await introspect("aps_x", { partnerKey: "apk_x", apiUrl: url }), {
        ok: false,
        error: "Unexpected response from AgentPass (HTTP 200)",
        code: "unexpected_response",
        status: 200,
      });
    } finally {
      server.close();
    }
  });

  it("passes a 429's code through, and names the status of a page that is not JSON", async () => {
    const limited = await answering(429, '{"error":"Too many requests","code":"rate_limited"}');
    try {
      assert.deepEqual(await introspect("aps_x", { partnerKey: "apk_x", apiUrl: limited.url }), {
        ok: false,
        error: "Too many requests",
        code: "rate_limited",
        status: 429,
      });
    } finally {
      limited.server.close();
    }
    const html = await answering(502, "<html>Bad gateway</html>");
    try {
      const result = await introspect("aps_x", { partnerKey: "apk_x", apiUrl: html.url });
      assert.deepEqual(result, {
        ok: false,
        error: "Unexpected response from AgentPass (HTTP 502)",
        code: "unexpected_response",
        status: 502,
      });
    } finally {
      html.server.close();
    }
  });
});
