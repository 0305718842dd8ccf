import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestIdentityService, type TestIdentityService } from "@agentpass/identity/testing";
import { agentPassAuth as expressAuth } from "../src/express.ts";
import { agentPassAuth as honoAuth } from "../src/hono.ts";
import { createVerifier, introspect, type VerifierFault, verify } from "../src/index.ts";
import { closedPortUrl } from "./support/loopback.ts";

/**
 * Runs `body` with the environment variables set (or unset, for undefined), then restores them.
 * What `body` starts synchronously sees them; a promise it returns is handed back.
 */
function withEnv<T>(values: Record<string, string | undefined>, body: () => T): T {
  const saved = Object.fromEntries(Object.keys(values).map((name) => [name, process.env[name]]));
  const apply = (from: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(from)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(values);
  try {
    return body();
  } finally {
    apply(saved);
  }
}

describe("a verifier that cannot work is refused when it is made, not on every request", () => {
  it("refuses a missing partner key, one that is not a partner key, and a malformed URL", () => {
    withEnv({ AGENTPASS_PARTNER_KEY: undefined, AGENTPASS_URL: undefined }, () => {
      assert.throws(
        () => createVerifier(),
        /no partner key: pass partnerKey or set AGENTPASS_PARTNER_KEY/,
      );
      assert.throws(() => createVerifier({ partnerKey: "" }), /no partner key/);
      assert.throws(() => createVerifier({ partnerKey: "apu_user_key" }), /not a partner key/);
      assert.throws(
        () => createVerifier({ partnerKey: "apk_x", apiUrl: "agentpass.example" }),
        /apiUrl is not an http\(s\) URL: agentpass\.example/,
      );
      assert.throws(() => expressAuth({}), /no partner key/, "the Express middleware too");
      assert.throws(() => honoAuth({}), /no partner key/, "the Hono middleware too");
    });
  });

  it("names no AgentPass of its own: without apiUrl or AGENTPASS_URL a verifier is refused", () => {
    withEnv({ AGENTPASS_PARTNER_KEY: undefined, AGENTPASS_URL: undefined }, () => {
      const noUrl = /no AgentPass URL: pass apiUrl or set AGENTPASS_URL/;
      assert.throws(() => createVerifier({ partnerKey: "apk_x" }), noUrl);
      assert.throws(() => createVerifier({ partnerKey: "apk_x", apiUrl: "" }), noUrl);
      assert.throws(() => expressAuth({ partnerKey: "apk_x" }), noUrl);
      assert.throws(() => honoAuth({ partnerKey: "apk_x" }), noUrl);
    });
  });

  it("verify() and introspect() without any URL send nothing and answer api_url_missing", async () => {
    const missing = {
      ok: false,
      error: "No AgentPass URL: pass apiUrl or set AGENTPASS_URL",
      status: 0,
      code: "api_url_missing",
    };
    // Made-up key and token: were a default URL still used, a stranger would receive only these.
    const [verified, blank, introspected] = await withEnv({ AGENTPASS_URL: undefined }, () =>
      Promise.all([
        verify("apk_made_up", "aps_made_up"),
        verify("apk_made_up", "aps_made_up", ""),
        introspect("aps_made_up", { partnerKey: "apk_made_up" }),
      ]),
    );
    assert.deepEqual(verified, missing);
    assert.deepEqual(blank, missing);
    assert.deepEqual(introspected, missing);
  });

  it("reads AGENTPASS_PARTNER_KEY and AGENTPASS_URL when they are not given", () => {
    withEnv({ AGENTPASS_PARTNER_KEY: "apk_from_env", AGENTPASS_URL: "not a url" }, () => {
      assert.throws(() => createVerifier(), /apiUrl is not an http\(s\) URL: not a url/);
    });
    withEnv({ AGENTPASS_PARTNER_KEY: "apk_from_env", AGENTPASS_URL: "http://127.0.0.1:9" }, () => {
      assert.equal(typeof createVerifier().verify, "function");
      assert.equal(typeof expressAuth(), "function");
    });
  });
});

describe("a partner key refused by AgentPass is reported once, as what it is", () => {
  let identity: TestIdentityService;
  before(async () => {
    identity = await startTestIdentityService();
  });
  after(() => identity.close());

  const mint = async () => {
    const { key } = await identity.createUserKey(`p-${crypto.randomUUID()}@example.com`);
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    return ((await response.json()) as { sessionToken: string }).sessionToken;
  };

  it("tells onError of a revoked key once until it works again, and of an unknown key", async () => {
    const partner = await identity.createPartner({ name: "R", ownerEmail: "r@example.com" });
    const key = await identity.createPartnerKey(partner.id);
    const faults: VerifierFault[] = [];
    const verifier = createVerifier({
      partnerKey: key.key,
      apiUrl: identity.url,
      onError: (fault) => faults.push(fault),
    });
    const token = await mint();
    assert.equal((await verifier.verify(token)).ok, true);
    await identity.revokePartnerKey(key.id);
    for (let i = 0; i < 3; i++) assert.equal((await verifier.verify(token)).status, 403);
    assert.deepEqual(faults, [
      { code: "partner_key_revoked", message: "AgentPass: your partner key has been revoked" },
    ]);

    const unknown = createVerifier({
      partnerKey: `apk_${"A".repeat(38)}`,
      apiUrl: identity.url,
      onError: (fault) => faults.push(fault),
    });
    for (let i = 0; i < 3; i++) assert.equal((await unknown.verify(token)).status, 401);
    assert.deepEqual(faults.at(-1), {
      code: "partner_key_invalid",
      message: "AgentPass: your partner key is not valid",
    });
    assert.equal(faults.length, 2, "once each");
  });

  it("tells onError of an AgentPass it cannot reach, once per cause, naming the URL and why", async () => {
    const faults: VerifierFault[] = [];
    const partner = await identity.createPartner({ name: "N", ownerEmail: "n@example.com" });
    const key = await identity.createPartnerKey(partner.id);
    const token = await mint();
    const downUrl = await closedPortUrl();
    const down = createVerifier({
      partnerKey: key.key,
      apiUrl: `${downUrl}/`,
      onError: (fault) => faults.push(fault),
    });
    for (let i = 0; i < 3; i++) {
      const verified = await down.verify(token);
      assert.equal(verified.ok ? "ok" : verified.code, "network_error");
      const introspected = await down.introspect?.(token);
      assert.equal(introspected?.ok === false && introspected.code, "network_error");
    }
    assert.deepEqual(faults, [
      {
        code: "network_error",
        message: `AgentPass cannot be reached at ${downUrl} (ECONNREFUSED)`,
      },
    ]);

    // A URL that answers, but not as AgentPass's API does: a wrong path, here.
    const wrong = createVerifier({
      partnerKey: key.key,
      apiUrl: `${identity.url}/not-agentpass`,
      onError: (fault) => faults.push(fault),
    });
    for (let i = 0; i < 3; i++) assert.equal((await wrong.verify(token)).ok, false);
    assert.equal(faults.length, 2, "once");
    assert.equal(faults[1]?.code, "unexpected_response");
    assert.match(
      String(faults[1]?.message),
      new RegExp(`^AgentPass at ${identity.url}/not-agentpass answered HTTP 404 `),
    );
  });

  it("does not take a bad session token for a fault of the partner's", async () => {
    const partner = await identity.createPartner({ name: "T", ownerEmail: "t@example.com" });
    const key = await identity.createPartnerKey(partner.id);
    const faults: VerifierFault[] = [];
    const verifier = createVerifier({
      partnerKey: key.key,
      apiUrl: identity.url,
      onError: (fault) => faults.push(fault),
    });
    assert.equal((await verifier.verify("aps_forged")).status, 401);
    assert.deepEqual(faults, []);
  });
});
