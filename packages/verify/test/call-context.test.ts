import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { authenticate, createVerifier } from "../src/index.ts";

/** A verifier whose every call is answered 200 in process, the headers it sent kept in `sent`. */
function recordingVerifier() {
  const sent: Headers[] = [];
  const answer: typeof fetch = async (_input, init) => {
    sent.push(new Headers(init?.headers));
    return Response.json({ email: "ada@example.com" });
  };
  const verifier = createVerifier({
    partnerKey: "apk_test",
    apiUrl: "http://agentpass.test",
    fetch: answer,
  });
  return { verifier, sent };
}

const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("a verification's call context", () => {
  it("sends the request id as X-Request-Id and the trace as traceparent", async () => {
    const { verifier, sent } = recordingVerifier();
    await verifier.verify("aps_token", { requestId: "req-1", traceparent: TRACEPARENT });
    assert.equal(sent[0]?.get("x-request-id"), "req-1");
    assert.equal(sent[0]?.get("traceparent"), TRACEPARENT);
    await authenticate(verifier, "aps_token", { requestId: "req-2" });
    assert.equal(sent[1]?.get("x-request-id"), "req-2");
    assert.equal(sent[1]?.get("traceparent"), null);
  });

  it("sends the trace's tracestate with its traceparent, and no tracestate alone", async () => {
    const { verifier, sent } = recordingVerifier();
    await verifier.verify("aps_token", { traceparent: TRACEPARENT, tracestate: "vendor=opaque" });
    assert.equal(sent[0]?.get("tracestate"), "vendor=opaque");
    await verifier.verify("aps_token", { tracestate: "vendor=opaque" });
    assert.equal(sent[1]?.get("tracestate"), null);
    await verifier.verify("aps_token", { traceparent: TRACEPARENT, tracestate: "x".repeat(513) });
    assert.equal(sent[2]?.get("tracestate"), null, "over 512 characters");
  });

  it("sends neither header when the values are not of their form", async () => {
    const { verifier, sent } = recordingVerifier();
    await verifier.verify("aps_token", { requestId: "two words", traceparent: "00-nope" });
    await verifier.verify("aps_token", { requestId: "x".repeat(129) });
    await verifier.verify("aps_token");
    for (const headers of sent) {
      assert.equal(headers.get("x-request-id"), null);
      assert.equal(headers.get("traceparent"), null);
    }
    assert.equal(sent.length, 3);
  });
});
