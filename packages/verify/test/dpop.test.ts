import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import {
  calculateJwkThumbprint,
  EmbeddedJWK,
  exportJWK,
  generateKeyPair,
  type JWTPayload,
  jwtVerify,
} from "jose";
import { createDpopKey, dpopHeaders, dpopProof, importDpopKey } from "../src/dpop.ts";

/** A proof's header and claims, once jose has verified its signature by the key it carries. */
async function verified(proof: string) {
  const { payload, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, {
    typ: "dpop+jwt",
    algorithms: ["ES256"],
  });
  return { payload, header: protectedHeader };
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("base64url");

describe("@agentpass/verify/dpop", () => {
  it("signs a proof jose verifies, with RFC 9449's header and claims for the request", async () => {
    const key = await createDpopKey();
    const before = Math.floor(Date.now() / 1000);
    const proof = await dpopProof(key, {
      method: "post",
      url: "https://Notes.Example/api/notes?page=2#top",
    });
    const after = Math.floor(Date.now() / 1000);
    const { payload, header } = await verified(proof);
    assert.deepEqual(header, { typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk });
    assert.deepEqual(Object.keys(key.publicJwk).sort(), ["crv", "kty", "x", "y"]);
    assert.deepEqual(Object.keys(payload).sort(), ["htm", "htu", "iat", "jti"]);
    assert.equal(payload.htm, "POST");
    assert.equal(payload.htu, "https://notes.example/api/notes", "no query, no fragment");
    assert.ok(typeof payload.jti === "string" && payload.jti.length >= 16, String(payload.jti));
    assert.ok(payload.iat !== undefined && payload.iat >= before && payload.iat <= after);
  });

  it("binds a proof to the token it goes with (ath) and carries a nonce when given one", async () => {
    const key = await createDpopKey();
    const token = `aps_${"t".repeat(40)}`;
    const { payload } = await verified(
      await dpopProof(key, {
        method: "GET",
        url: "https://api.example/me",
        accessToken: token,
        nonce: "n-1",
      }),
    );
    assert.equal(payload.ath, sha256(token));
    assert.equal(payload.nonce, "n-1");
  });

  it("makes a fresh jti for every proof, so that each is accepted once", async () => {
    const key = await createDpopKey();
    const request = { method: "GET", url: "https://api.example/me" };
    const jtis = new Set<unknown>();
    for (let i = 0; i < 20; i++)
      jtis.add((await verified(await dpopProof(key, request))).payload.jti);
    assert.equal(jtis.size, 20);
  });

  it("names the key by jose's RFC 7638 thumbprint, which two keys never share", async () => {
    const key = await createDpopKey();
    assert.equal(key.jkt, await calculateJwkThumbprint(key.publicJwk, "sha256"));
    assert.equal(
      key.jkt,
      await calculateJwkThumbprint(await exportJWK(key.privateKey as CryptoKey), "sha256"),
    );
    assert.notEqual(key.jkt, (await createDpopKey()).jkt);
  });

  it("imports a saved private JWK as the same key", async () => {
    const key = await createDpopKey();
    const saved = JSON.parse(JSON.stringify(await exportJWK(key.privateKey as CryptoKey)));
    const imported = await importDpopKey(saved);
    assert.equal(imported.jkt, key.jkt);
    assert.deepEqual(imported.publicJwk, key.publicJwk);
    const { header } = await verified(
      await dpopProof(imported, { method: "GET", url: "https://api.example/" }),
    );
    assert.deepEqual(header.jwk, key.publicJwk, "the proof carries the public half only");
  });

  it("refuses to import what is not a P-256 private key", async () => {
    const rsa = await generateKeyPair("RS256", { extractable: true });
    const ed = await generateKeyPair("EdDSA", { extractable: true });
    const key = await createDpopKey();
    for (const jwk of [
      key.publicJwk,
      await exportJWK(rsa.privateKey),
      await exportJWK(ed.privateKey),
      { kty: "EC", crv: "P-384", d: "x", x: "x", y: "y" },
      null,
      "a string",
    ]) {
      await assert.rejects(
        importDpopKey(jwk as Parameters<typeof importDpopKey>[0]),
        TypeError,
        JSON.stringify(jwk),
      );
    }
  });

  it("gives the two headers of a request with a bound token", async () => {
    const key = await createDpopKey();
    const token = "aps_bound";
    const headers = await dpopHeaders(key, token, "delete", "https://api.example/notes/7?x=1");
    assert.deepEqual(Object.keys(headers), ["Authorization", "DPoP"]);
    assert.equal(headers.Authorization, "DPoP aps_bound");
    const { payload }: { payload: JWTPayload } = await verified(headers.DPoP);
    assert.equal(payload.htm, "DELETE");
    assert.equal(payload.htu, "https://api.example/notes/7");
    assert.equal(payload.ath, sha256(token));
  });
});
