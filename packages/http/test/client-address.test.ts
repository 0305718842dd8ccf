import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { describe, it } from "node:test";
import {
  clientAddress,
  clientAddressOf,
  isLoopbackRequest,
  parseTrustProxy,
  rateLimitKey,
  type TrustProxy,
} from "../src/client-address.ts";

function trust(value: string): TrustProxy {
  const parsed = parseTrustProxy(value);
  if (typeof parsed === "object" && "error" in parsed) throw new Error(parsed.error);
  return parsed;
}

describe("client addresses behind proxies", () => {
  it("ignores forwarding headers unless a proxy is trusted: a client cannot pick its own key", () => {
    for (const value of ["", "false", "0"]) {
      assert.equal(clientAddress(trust(value), "203.0.113.7", "198.51.100.1"), "203.0.113.7");
    }
  });

  it("takes the address a trusted hop forwarded, and no further than the trusted hops", () => {
    const twoHops = trust("2");
    // client (spoofed entry first) -> proxy A -> proxy B -> service
    const headers = "6.6.6.6, 198.51.100.9, 10.0.0.5";
    assert.equal(clientAddress(twoHops, "10.0.0.6", headers), "198.51.100.9");
    assert.equal(clientAddress(trust("1"), "10.0.0.6", headers), "10.0.0.5");
  });

  it("trusts proxies by address range, stopping at the first hop outside it", () => {
    const ranges = trust("10.0.0.0/8, fd00::/8");
    const headers = "6.6.6.6, 198.51.100.9, 10.0.0.5";
    assert.equal(clientAddress(ranges, "10.0.0.6", headers), "198.51.100.9");
    assert.equal(
      clientAddress(ranges, "203.0.113.1", headers),
      "203.0.113.1",
      "a peer outside the ranges is the client, whatever it forwards",
    );
    assert.equal(clientAddress(ranges, "::ffff:10.0.0.6", headers), "198.51.100.9");
  });

  it("reads only X-Forwarded-For, the header proxies write: Forwarded cannot move the key", () => {
    // The proxy wrote X-Forwarded-For; the client added a Forwarded naming someone else, which
    // once made the request the proxy's own (a second budget). Now it changes nothing.
    const from = (headers: Record<string, string>) =>
      ({ socket: { remoteAddress: "10.0.0.6" }, headers }) as unknown as IncomingMessage;
    const proxied = { "x-forwarded-for": "203.0.113.9" };
    assert.equal(clientAddressOf(trust("1"), from(proxied)), "203.0.113.9");
    for (const forwarded of ["for=198.51.100.7", "for=203.0.113.9", 'for="[2001:db8::1]"']) {
      assert.equal(clientAddressOf(trust("1"), from({ ...proxied, forwarded })), "203.0.113.9");
    }
    assert.equal(
      clientAddressOf(trust("1"), from({ forwarded: "for=198.51.100.7" })),
      "10.0.0.6",
      "a Forwarded header alone names nobody",
    );
  });

  it("gives the address itself; budgets key IPv6 by its /48, IPv4 by its address", () => {
    const none = trust("");
    assert.equal(
      clientAddress(none, "2001:db8:cafe:1:aaaa::1", undefined),
      "2001:db8:cafe:1:aaaa::1",
    );
    assert.equal(clientAddress(none, "::1", undefined), "::1", "not 0:0:0::/48");
    assert.equal(clientAddress(trust("1"), "127.0.0.1", "2001:db8:cafe::3"), "2001:db8:cafe::3");
    assert.equal(clientAddress(none, "::ffff:192.0.2.1", undefined), "192.0.2.1");
    assert.equal(clientAddress(none, undefined, undefined), "unknown");
    assert.equal(rateLimitKey("2001:db8:cafe:1:aaaa::1"), "2001:db8:cafe::/48");
    assert.equal(rateLimitKey("2001:db8:cafe:ff::ffff"), "2001:db8:cafe::/48");
    assert.equal(rateLimitKey("2001:db8::1"), "2001:db8:0::/48");
    assert.equal(rateLimitKey("192.0.2.1"), "192.0.2.1");
    assert.equal(rateLimitKey("unknown"), "unknown");
  });

  it("never lets garbage in a header become the key", () => {
    const headers = "198.51.100.9, not-an-address";
    assert.equal(clientAddress(trust("1"), "10.0.0.6", headers), "10.0.0.6");
  });

  it("refuses a TRUST_PROXY it cannot read", () => {
    for (const value of ["10.0.0.0/33", "proxy.example", "1.2.3.4/x", "::1/129"]) {
      assert.ok("error" in (parseTrustProxy(value) as object), value);
    }
  });
});

describe("requests from this machine", () => {
  const from = (peer: string, headers: Record<string, string> = {}) =>
    ({ socket: { remoteAddress: peer }, headers }) as unknown as IncomingMessage;

  it("are those whose peer is a loopback address and that no proxy forwarded", () => {
    for (const peer of ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]) {
      assert.equal(isLoopbackRequest("none", from(peer)), true, peer);
    }
    for (const peer of ["10.0.0.1", "::ffff:10.0.0.1", "fe80::1", ""]) {
      assert.equal(isLoopbackRequest("none", from(peer)), false, peer);
    }
    const forwarded = from("127.0.0.1", { "x-forwarded-for": "127.0.0.1" });
    assert.equal(isLoopbackRequest("none", forwarded), false, "an untrusted proxy's request");
  });

  it("through trusted proxies, are those whose client they name is a loopback address", () => {
    const one = trust("1");
    assert.equal(isLoopbackRequest(one, from("127.0.0.1", { "x-forwarded-for": "::1" })), true);
    assert.equal(
      isLoopbackRequest(one, from("127.0.0.1", { "x-forwarded-for": "127.0.0.1, 203.0.113.7" })),
      false,
      "the entry the proxy appended names the client",
    );
    assert.equal(
      isLoopbackRequest(one, from("10.0.0.1", { "x-forwarded-for": "127.0.0.1" })),
      false,
      "a proxy on another machine",
    );
    assert.equal(
      isLoopbackRequest(
        one,
        from("127.0.0.1", { "x-forwarded-for": "127.0.0.1", forwarded: "for=203.0.113.7" }),
      ),
      false,
      "two headers that disagree vouch for no one",
    );
    assert.equal(
      isLoopbackRequest(one, from("127.0.0.1", { "x-forwarded-for": "unknown" })),
      false,
    );
    assert.equal(
      isLoopbackRequest(trust("10.0.0.0/8"), from("127.0.0.1", { "x-forwarded-for": "::1" })),
      false,
      "a peer outside the trusted ranges vouches for no one",
    );
  });
});
