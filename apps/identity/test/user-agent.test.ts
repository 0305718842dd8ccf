import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeUserAgent } from "../src/http/web/user-agent.ts";

describe("a user agent on a person's page", () => {
  it("names the browser and system bowser knows", () => {
    const chrome =
      "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    assert.equal(describeUserAgent(chrome), "Chrome on Linux");
    const firefox =
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.5; rv:133.0) Gecko/20100101 Firefox/133.0";
    assert.equal(describeUserAgent(firefox), "Firefox on macOS");
  });

  it("never shows the sender's own words, even where bowser's fallback would", () => {
    const crafted =
      "AgentPass Security: this account is locked. Restore at https://evil.example/1.0 (x)";
    assert.equal(describeUserAgent(crafted), "Unknown browser");
    assert.equal(describeUserAgent("curl/8.5.0"), "Unknown browser");
    assert.equal(describeUserAgent("Evil/1.0 (Windows NT 10.0)"), "Unknown browser on Windows");
    assert.equal(describeUserAgent(null), "Unknown browser");
  });
});
