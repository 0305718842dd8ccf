import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  createVerifier,
  introspect,
  type RequestProof,
  type VerifierFault,
  verify,
} from "../src/index.ts";
import { closedPortUrl } from "./support/loopback.ts";
import { type Received, recordingService } from "./support/recording-service.ts";

/**
 * What the library sends AgentPass for a request that came with a DPoP proof, and what it makes
 * of the answers, against a recording service standing where AgentPass would: the end-to-end
 * checks against the real service are in dpop-end-to-end.test.ts.
 */

const DPOP: RequestProof = {
  proof: "eyJ0eXAiOiJkcG9wK2p3dCJ9.eyJqdGkiOiIxIn0.c2ln",
  method: "GET",
  url: "https://api.example/notes",
};
const PROOF_INVALID = {
  status: 401,
  body: {
    error: "Invalid DPoP proof: The DPoP proof's htu is not this URL",
    code: "session_token_proof_invalid",
  },
};
const PROOF_REQUIRED = {
  status: 401,
  body: {
    error: "This session token is bound to a key: send its DPoP proof",
    code: "session_token_proof_required",
  },
};
const INVALID_DPOP = {
  ok: false,
  error: "Invalid dpop: expected {proof, method, url}",
  status: 400,
  code: "dpop_field_invalid",
};

/** Every `dpop` AgentPass would refuse, by the shape its contract gives. */
const MALFORMED: unknown[] = [
  null,
  42,
  "a proof",
  [],
  {},
  { proof: DPOP.proof, method: "GET" },
  { proof: DPOP.proof, url: DPOP.url },
  { proof: 7, method: "GET", url: DPOP.url },
  { proof: DPOP.proof, method: "", url: DPOP.url },
  { proof: DPOP.proof, method: "GET", url: "/notes" },
  { proof: DPOP.proof, method: "GET", url: "ftp://api.example/notes" },
  { proof: "x".repeat(8193), method: "GET", url: DPOP.url },
  { proof: DPOP.proof, method: "GET", url: `https://api.example/${"n".repeat(8192)}` },
];

const bodyOf = (received: Received | undefined) => JSON.parse(received?.body ?? "null");

describe("verify() with a DPoP proof", () => {
  let service: Awaited<ReturnType<typeof recordingService>>;
  let answer = { status: 200, body: { email: "ada@example.com" } as unknown };

  before(async () => {
    service = await recordingService(() => ({
      ...answer,
      headers: { "agentpass-token-expires-at": new Date(Date.now() + 300_000).toISOString() },
    }));
  });
  after(() => service.server.close());

  it("sends the proof, the method and the URL in /api/verify's body, and only those", async () => {
    service.received.length = 0;
    const extra = { ...DPOP, note: "not AgentPass's" } as RequestProof;
    assert.equal((await verify("apk_x", "aps_t", service.url, { dpop: extra })).ok, true);
    await verify("apk_x", "aps_t", service.url, { dpop: { method: "GET", url: DPOP.url } });
    await verify("apk_x", "aps_t", service.url, { dpop: { ...DPOP, proof: "" } });
    await verify("apk_x", "aps_t", service.url);
    await createVerifier({ partnerKey: "apk_x", apiUrl: service.url }).verify("aps_t", {
      dpop: DPOP,
      requestId: "req-1",
    });
    const [withProof, noProof, emptyProof, none, fromVerifier] = service.received;
    assert.equal(withProof?.path, "/api/verify");
    assert.deepEqual(bodyOf(withProof), { sessionToken: "aps_t", dpop: DPOP });
    // A request that had no proof is asked about as one without: a bound token is then refused.
    assert.deepEqual(bodyOf(noProof), { sessionToken: "aps_t" });
    assert.deepEqual(bodyOf(emptyProof), { sessionToken: "aps_t" });
    assert.deepEqual(bodyOf(none), { sessionToken: "aps_t" });
    assert.deepEqual(bodyOf(fromVerifier), { sessionToken: "aps_t", dpop: DPOP });
    assert.equal(fromVerifier?.headers["x-request-id"], "req-1");
  });

  it("passes AgentPass's verdicts on the proof through, with its message", async () => {
    const verifier = createVerifier({ partnerKey: "apk_x", apiUrl: service.url });
    for (const given of [PROOF_INVALID, PROOF_REQUIRED]) {
      answer = given;
      const expected = { ok: false, status: 401, ...given.body };
      assert.deepEqual(await verify("apk_x", "aps_t", service.url, { dpop: DPOP }), expected);
      assert.deepEqual(await verifier.verify("aps_t", { dpop: DPOP }), expected);
    }
    answer = { status: 200, body: { email: "ada@example.com" } };
  });

  it("refuses a malformed dpop without a request, in AgentPass's words, never throwing", async () => {
    const closed = await closedPortUrl(); // a request would give the network error instead
    const verifier = createVerifier({ partnerKey: "apk_x", apiUrl: closed });
    for (const dpop of MALFORMED) {
      const context = { dpop } as { dpop: RequestProof };
      assert.deepEqual(await verify("apk_x", "aps_t", closed, context), INVALID_DPOP, String(dpop));
      assert.deepEqual(await verifier.verify("aps_t", context), INVALID_DPOP);
      assert.deepEqual(
        await introspect("aps_t", { partnerKey: "apk_x", apiUrl: closed, ...context }),
        INVALID_DPOP,
      );
      assert.deepEqual(await verifier.introspect?.("aps_t", context), INVALID_DPOP);
    }
    // A context that is no object carries no proof: the call is made (and finds no service).
    for (const context of [42, "x", null, Symbol("s"), () => {}, { requestId: Symbol("r") }]) {
      const result = await verify("apk_x", "aps_t", closed, context as never);
      assert.equal(result.ok ? "ok" : result.code, "network_error");
    }
  });

  it("never caches nor shares an answer got with a proof, which AgentPass accepts once", async () => {
    const verifier = createVerifier({
      partnerKey: "apk_x",
      apiUrl: service.url,
      cacheTtlMs: 5_000,
    });
    const asked = () => service.received.filter((r) => bodyOf(r).sessionToken === "aps_c").length;
    for (let i = 0; i < 3; i++) {
      assert.equal((await verifier.verify("aps_c", { dpop: DPOP })).ok, true);
    }
    assert.equal(asked(), 3, "each call with a proof asks");
    const concurrent = await Promise.all(
      Array.from({ length: 5 }, () => verifier.verify("aps_c", { dpop: DPOP })),
    );
    assert.ok(concurrent.every((result) => result.ok));
    assert.equal(asked(), 8, "concurrent calls with proofs share no request");

    await verifier.verify("aps_c");
    await verifier.verify("aps_c");
    assert.equal(asked(), 9, "without a proof the cache answers the second call");
    await verifier.verify("aps_c", { dpop: DPOP });
    assert.equal(asked(), 10, "a cached token still has its proof checked");
  });

  it("tells onError nothing of a refused proof: it is the agent's fault, not the partner's", async () => {
    const faults: VerifierFault[] = [];
    const verifier = createVerifier({
      partnerKey: "apk_x",
      apiUrl: service.url,
      onError: (fault) => faults.push(fault),
    });
    for (const given of [PROOF_INVALID, PROOF_REQUIRED]) {
      answer = given;
      await verifier.verify("aps_t", { dpop: DPOP });
      answer = { status: 200, body: { active: false, dpop_error: given.body.code } };
      await verifier.introspect?.("aps_t", { dpop: DPOP });
    }
    assert.equal(faults.length, 0, JSON.stringify(faults));
    answer = { status: 500, body: { error: "Internal server error" } };
    await verifier.verify("aps_t", { dpop: DPOP });
    assert.deepEqual(
      faults.map((fault) => fault.code),
      ["unexpected_response"],
      "the same verifier does report a fault",
    );
    answer = { status: 200, body: { email: "ada@example.com" } };
  });
});

describe("introspect() with a DPoP proof", () => {
  let service: Awaited<ReturnType<typeof recordingService>>;
  let answer: { status: number; body: unknown } = { status: 200, body: { active: false } };

  before(async () => {
    service = await recordingService(() => answer);
  });
  after(() => service.server.close());

  const formOf = (received: Received | undefined) =>
    Object.fromEntries(new URLSearchParams(received?.body ?? ""));

  it("sends AgentPass's dpop_method, dpop_url and dpop_proof parameters", async () => {
    service.received.length = 0;
    const options = { partnerKey: "apk_x", apiUrl: service.url };
    await introspect("aps_t", { ...options, dpop: DPOP });
    await introspect("aps_t", { ...options, dpop: { method: "POST", url: DPOP.url } });
    await introspect("aps_t", options);
    await createVerifier(options).introspect?.("aps_t", { dpop: DPOP });
    const [withProof, noProof, none, fromVerifier] = service.received;
    assert.equal(withProof?.path, "/oauth/introspect");
    const expected = {
      token: "aps_t",
      dpop_method: "GET",
      dpop_url: DPOP.url,
      dpop_proof: DPOP.proof,
    };
    assert.deepEqual(formOf(withProof), expected);
    assert.deepEqual(formOf(noProof), { token: "aps_t", dpop_method: "POST", dpop_url: DPOP.url });
    assert.deepEqual(formOf(none), { token: "aps_t" });
    assert.deepEqual(formOf(fromVerifier), expected);
  });

  it("tells a refused proof from an inactive token, and gives a bound token's jkt", async () => {
    const options = { partnerKey: "apk_x", apiUrl: service.url, dpop: DPOP };
    answer = {
      status: 200,
      body: {
        active: false,
        dpop_error: "session_token_proof_invalid",
        dpop_error_description: PROOF_INVALID.body.error,
      },
    };
    assert.deepEqual(await introspect("aps_t", options), {
      ok: false,
      status: 200,
      error: PROOF_INVALID.body.error,
      code: "session_token_proof_invalid",
    });
    answer = { status: 200, body: { active: false } };
    assert.equal(((await introspect("aps_t", options)) as { code: string }).code, "token_inactive");
    answer = {
      status: 200,
      body: {
        active: true,
        email: "ada@example.com",
        sub: "acc_1",
        token_type: "DPoP",
        cnf: { jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" },
      },
    };
    assert.deepEqual(await introspect("aps_t", options), {
      ok: true,
      status: 200,
      email: "ada@example.com",
      sub: "acc_1",
      jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I",
    });
  });
});
