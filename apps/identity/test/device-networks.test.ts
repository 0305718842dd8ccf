import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startServer } from "@agentpass/http";
import { isSameNetwork, LOOPBACK_NETWORK, networkOf } from "../src/domain/device-login.ts";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";
import { type Mailbox, signInSecrets, startMailbox } from "./support/mailbox.ts";
import { webClient } from "./support/web-client.ts";

// The approval page of a device login warns when the login was started from another network than
// the browser's. Addresses reach it as the service records them (`clientIp()`): IPv4-mapped IPv6
// as IPv4, IPv6 as its /48.

describe("the network of an address, as the device approval page compares them", () => {
  it("names IPv4 by its /24 and IPv6 by its /48", () => {
    assert.equal(networkOf("203.0.113.77"), "203.0.113.0/24");
    assert.equal(networkOf("::ffff:203.0.113.77"), "203.0.113.0/24");
    assert.equal(networkOf("2001:db8:cafe:1::/64"), "2001:db8:cafe::/48");
    assert.equal(networkOf("2001:db8::1"), "2001:db8:0::/48");
    assert.equal(networkOf("2001:DB8:CAFE::/48"), "2001:db8:cafe::/48");
  });

  it("takes every loopback address, IPv4 or IPv6, as one network: this machine", () => {
    for (const address of ["127.0.0.1", "127.0.1.1", "::ffff:127.0.0.1", "::1", "0:0:0::/48"]) {
      assert.equal(networkOf(address), LOOPBACK_NETWORK, address);
    }
    // The CLI polls from 127.0.0.1; a browser on localhost arrives as ::1, recorded as its /48.
    assert.ok(isSameNetwork("127.0.0.1", "0:0:0::/48"));
    assert.ok(isSameNetwork("::1", "127.0.0.1"));
  });

  it("still tells other networks apart, loopback from the rest included", () => {
    assert.ok(!isSameNetwork("203.0.113.77", "198.51.100.7"));
    assert.ok(!isSameNetwork("127.0.0.1", "203.0.113.77"));
    assert.ok(!isSameNetwork("0:0:0::/48", "2001:db8:cafe::/48"));
    assert.ok(!isSameNetwork("127.0.0.1", "10.0.0.1"));
    assert.ok(isSameNetwork("203.0.113.77", "203.0.113.1"));
    assert.ok(isSameNetwork("2001:db8:cafe:1::/64", "2001:db8:cafe:2::/64"));
  });
});

describe("the device approval page on one machine", () => {
  let identity: TestIdentity;
  let mailbox: Mailbox;

  before(async () => {
    mailbox = await startMailbox();
    // Behind one trusted hop the test says where the login came from, as a local proxy would.
    identity = await openTestIdentity("sqlite", { SMTP_URL: mailbox.url, TRUST_PROXY: "1" });
  });
  after(async () => {
    await identity.close();
    await mailbox.close();
  });

  it("does not warn of another network when the login came from ::1 and the browser from 127.0.0.1", async () => {
    const server = await startServer(identity.service, { port: 0, host: "127.0.0.1" });
    try {
      const started = await fetch(`${server.url}/api/device/code`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "::1" },
        body: JSON.stringify({ client_name: "laptop" }),
      });
      const { user_code } = (await started.json()) as { user_code: string };
      const browser = webClient(identity.app);
      const email = `local-${crypto.randomUUID()}@example.com`;
      const since = mailbox.mails.length;
      await browser.post("/sign-in", { email, next: "/keys" });
      const { code } = signInSecrets(await mailbox.next(email, since));
      assert.equal((await browser.post("/sign-in/code", { code, next: "/keys" })).status, 303);
      const page = await (await browser.submit("/device", { code: user_code })).text();
      assert.match(page, /name="decision" value="approve"/);
      assert.doesNotMatch(page, /another network/);
    } finally {
      await new Promise<void>((resolve) => server.close().then(resolve, resolve));
    }
  });
});
