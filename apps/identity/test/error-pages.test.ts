import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

const PAGE = { accept: "text/html,application/xhtml+xml" };

for (const engine of testEngines()) {
  describe(`wrong paths and methods (${engine})`, () => {
    let identity: TestIdentity;
    before(async () => {
      identity = await openTestIdentity(engine);
    });
    after(() => identity.close());

    const ask = (path: string, init: RequestInit = {}) => identity.app.request(path, init);

    it("answers a known API path asked with another method 405 with Allow, in JSON", async () => {
      const verify = await ask("/api/verify");
      assert.equal(verify.status, 405);
      assert.equal(verify.headers.get("allow"), "OPTIONS, POST");
      assert.deepEqual(await verify.json(), {
        error: "Method not allowed",
        code: "method_not_allowed",
      });
      const partners = await ask("/api/partners", { method: "DELETE", headers: PAGE });
      assert.equal(partners.status, 405);
      assert.equal(partners.headers.get("allow"), "GET, HEAD, OPTIONS");
      assert.match(partners.headers.get("content-type") ?? "", /json/, "API paths stay JSON");
    });

    it("answers a browser with pages: 404 for an unknown path, 405 with Allow for a wrong method", async () => {
      const missing = await ask("/no-such-page", { headers: PAGE });
      assert.equal(missing.status, 404);
      assert.match(await missing.text(), /<title>Page not found · AgentPass<\/title>/);
      const wrong = await ask("/sign-in", { method: "PUT", headers: PAGE });
      assert.equal(wrong.status, 405);
      assert.equal(wrong.headers.get("allow"), "GET, HEAD, POST");
      assert.match(await wrong.text(), /Method not allowed \(HTTP 405\)/);
      const api = await ask("/no-such-page");
      assert.deepEqual(
        await api.json(),
        { error: "Not found", code: "not_found" },
        "a client that asks for no page gets JSON",
      );
    });

    it("serves a favicon", async () => {
      const icon = await ask("/favicon.svg");
      assert.equal(icon.status, 200);
      assert.equal(icon.headers.get("content-type"), "image/svg+xml");
      assert.equal((await ask("/favicon.ico")).headers.get("location"), "/favicon.svg");
    });
  });
}

describe("a server error on a page", () => {
  it("answers a browser with a page naming the request id, and no detail of the fault", async () => {
    const identity = await openTestIdentity("sqlite");
    await identity.db.destroy(); // the database goes away under the running app
    const response = await identity.app.request("/directory", { headers: PAGE });
    assert.equal(response.status, 500);
    const page = await response.text();
    const requestId = response.headers.get("x-request-id") ?? "";
    assert.match(requestId, /^[0-9a-f-]{36}$/);
    assert.match(
      page,
      new RegExp(`Internal server error \\(request id ${requestId}\\) \\(HTTP 500\\)`),
    );
    assert.doesNotMatch(
      page,
      /at .*\.ts:\d+|destroyed|Error:/,
      "no stack, no message of the fault",
    );
    await identity.database.drop();
  });
});
