import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { redirectUriMatches, validRedirectUris } from "../src/domain/redirect-uris.ts";

const accepted = (uri: string) => validRedirectUris([uri]) !== null;

describe("validRedirectUris", () => {
  it("accepts https, and http on a loopback host (RFC 8252 section 7.3)", () => {
    for (const uri of [
      "https://app.example/callback",
      "https://app.example/callback?tenant=1",
      "http://127.0.0.1/callback",
      "http://127.0.0.1:8080/callback",
      "http://[::1]/callback",
      "http://localhost:3000/callback",
    ]) {
      assert.ok(accepted(uri), uri);
    }
  });

  it("accepts a native app's private-use scheme (RFC 8252 section 7.1)", () => {
    for (const uri of [
      "com.example.app:/oauth/callback",
      "com.example.app://callback",
      "cursor://anysphere.cursor-retrieval/oauth/callback",
      "vscode://vscode.github-authentication/did-authenticate",
    ]) {
      assert.ok(accepted(uri), uri);
    }
  });

  it("refuses schemes a browser handles itself, and http off the machine", () => {
    for (const uri of [
      "javascript:alert(1)",
      "JavaScript:alert(1)",
      "data:text/html,<script>alert(1)</script>",
      "file:///etc/passwd",
      "vbscript:msgbox(1)",
      "blob:https://app.example/0f6e0b4c",
      "about:blank",
      "view-source:https://app.example/",
      "http://app.example/callback",
      "http://127.0.0.1.nip.io/callback",
      "http://localhost.app.example/callback",
    ]) {
      assert.equal(accepted(uri), false, uri);
    }
  });

  it("refuses fragments, credentials, whitespace, relative and empty URIs", () => {
    for (const uri of [
      "https://app.example/callback#x",
      "com.example.app:/callback#x",
      "https://user:pass@app.example/callback",
      "http://user@127.0.0.1/callback",
      "https://app.example/call back",
      "com.example.app:/call\nback",
      "/callback",
      "com.example.app:",
      "",
    ]) {
      assert.equal(accepted(uri), false, JSON.stringify(uri));
    }
  });

  it("keeps today's contract: 1 to 10 strings, each kept as given, or null", () => {
    const uris = ["http://127.0.0.1/callback", "com.example.app:/callback"];
    assert.deepEqual(validRedirectUris(uris), uris);
    assert.equal(validRedirectUris([]), null);
    assert.equal(validRedirectUris(Array(11).fill("https://app.example/cb")), null);
    assert.equal(validRedirectUris("https://app.example/cb"), null);
    assert.equal(validRedirectUris([42]), null);
    assert.equal(validRedirectUris([`https://app.example/${"a".repeat(2000)}`]), null);
    assert.equal(validRedirectUris(["https://app.example/cb", "javascript:alert(1)"]), null);
  });
});

describe("redirectUriMatches", () => {
  it("matches a loopback IP redirect on any port, registered with a port or without", () => {
    assert.ok(redirectUriMatches(["http://127.0.0.1/callback"], "http://127.0.0.1:53817/callback"));
    assert.ok(redirectUriMatches(["http://127.0.0.1:8080/callback"], "http://127.0.0.1/callback"));
    assert.ok(redirectUriMatches(["http://[::1]/callback"], "http://[::1]:61000/callback"));
    assert.ok(redirectUriMatches(["http://127.0.0.1/cb?x=1"], "http://127.0.0.1:5000/cb?x=1"));
  });

  it("still matches scheme, host, path and query exactly", () => {
    const registered = ["http://127.0.0.1/callback"];
    for (const presented of [
      "http://127.0.0.1:53817/callback/",
      "http://127.0.0.1:53817/Callback",
      "http://127.0.0.1:53817/callback?x=1",
      "http://127.0.0.1:53817/other/../callback",
      "http://127.0.0.1:53817/callback#x",
      "http://[::1]:53817/callback",
      "http://127.0.0.2:53817/callback",
      "https://127.0.0.1:53817/callback",
      "http://127.0.0.1:99999/callback",
      "http://127.0.0.1:53817@evil.example/callback",
      "http://127.0.0.1.evil.example:53817/callback",
    ]) {
      assert.equal(redirectUriMatches(registered, presented), false, presented);
    }
  });

  it("matches localhost, https and private-use URIs only as registered (RFC 8252 section 8.3)", () => {
    assert.ok(redirectUriMatches(["http://localhost:3000/cb"], "http://localhost:3000/cb"));
    assert.equal(redirectUriMatches(["http://localhost/cb"], "http://localhost:3000/cb"), false);
    assert.equal(
      redirectUriMatches(["https://app.example/cb"], "https://app.example:8443/cb"),
      false,
    );
    assert.ok(redirectUriMatches(["com.example.app:/cb"], "com.example.app:/cb"));
    assert.equal(redirectUriMatches(["com.example.app:/cb"], "com.example.app:/cb2"), false);
    assert.equal(redirectUriMatches([], "http://127.0.0.1/cb"), false);
  });
});
