import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  generateSealingKey,
  openSessionToken,
  type SessionClaims,
  sealSessionToken,
} from "../src/infra/sealed-tokens.ts";

const CLAIMS: SessionClaims = {
  userKeyId: "0b6f8b44-6a4f-4c1e-9a39-6f7a3f1f2b10",
  accountId: "5d0c2f7e-1b2a-4e3d-8c4b-2a1f0e9d8c7b",
  issuedAt: Date.UTC(2026, 10, 23, 12),
  expiresAt: Date.UTC(2026, 10, 23, 12, 5),
  audience: null,
};
const JKT = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";

describe("sealed session tokens", () => {
  const key = generateSealingKey();
  const keys = new Map([[key.id, key]]);

  it("keeps a bearer token's layout: no jkt, the length it always had", () => {
    for (const audience of [null, "9a3e1c52-0d4b-4f6a-8e7c-1b2d3f4a5b6c"]) {
      const token = sealSessionToken(key, { ...CLAIMS, audience });
      const bytes = Buffer.from(token.slice(4), "base64url").length;
      assert.equal(bytes, 1 + 4 + 32 + 45 + (audience ? 16 : 0) + 16);
      assert.deepEqual(openSessionToken(keys, token), { ...CLAIMS, audience });
    }
  });

  it("carries the thumbprint of a DPoP-bound token, with or without an audience", () => {
    for (const audience of [null, "9a3e1c52-0d4b-4f6a-8e7c-1b2d3f4a5b6c"]) {
      const claims = { ...CLAIMS, audience, jkt: JKT };
      assert.deepEqual(openSessionToken(keys, sealSessionToken(key, claims)), claims);
    }
  });

  it("refuses to seal a jkt that is not a SHA-256 thumbprint", () => {
    assert.throws(() => sealSessionToken(key, { ...CLAIMS, jkt: "short" }));
  });
});
