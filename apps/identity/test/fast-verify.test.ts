import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

// Headers of the connection, not of the answer.
const TRANSPORT = new Set(["date", "connection", "keep-alive", "content-length"]);

async function describeAnswer(response: Response) {
  const headers = [...response.headers]
    .filter(([name]) => !TRANSPORT.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return { status: response.status, headers, body: await response.text() };
}

for (const engine of testEngines()) {
  describe(`POST /api/verify through the node:http fast path (${engine})`, () => {
    let identity: TestIdentity;
    let server: RunningServer;
    let partner: Awaited<ReturnType<TestIdentity["partner"]>>;
    let token: string;

    before(async () => {
      identity = await openTestIdentity(engine);
      server = await startServer(identity.service, { port: 0, host: "127.0.0.1" });
      partner = await identity.partner();
      const { key } = await identity.userKey();
      token = await identity.token(key);
    });
    after(async () => {
      await server.close(); // closes the service too
      await identity.database.drop();
    });

    it("answers every case with the same status, headers and body as the Hono route", async () => {
      const bearer = `Bearer ${partner.key}`;
      const cases: {
        name: string;
        path?: string;
        headers: Record<string, string>;
        body: string;
      }[] = [
        {
          name: "valid",
          headers: { authorization: bearer },
          body: JSON.stringify({ sessionToken: token }),
        },
        {
          name: "query string",
          path: "/api/verify?x=1",
          headers: { authorization: bearer },
          body: JSON.stringify({ sessionToken: token }),
        },
        { name: "no authorization", headers: {}, body: JSON.stringify({ sessionToken: token }) },
        { name: "empty bearer", headers: { authorization: "Bearer " }, body: "{}" },
        { name: "basic scheme", headers: { authorization: `Basic ${partner.key}` }, body: "{}" },
        { name: "not JSON", headers: { authorization: bearer }, body: "{nope" },
        { name: "empty body", headers: { authorization: bearer }, body: "" },
        { name: "array body", headers: { authorization: bearer }, body: "[]" },
        {
          name: "token not a string",
          headers: { authorization: bearer },
          body: '{"sessionToken":7}',
        },
        { name: "empty token", headers: { authorization: bearer }, body: '{"sessionToken":""}' },
        {
          name: "invalid UTF-8",
          headers: { authorization: bearer },
          body: '{"sessionToken":"\udc80"}',
        },
        {
          name: "unknown partner key",
          headers: { authorization: "Bearer apk_unknown" },
          body: JSON.stringify({ sessionToken: token }),
        },
        {
          name: "bad token",
          headers: { authorization: bearer },
          body: '{"sessionToken":"aps_nope"}',
        },
        {
          name: "too large",
          headers: { authorization: bearer },
          body: JSON.stringify({ sessionToken: token, pad: "x".repeat(70_000) }),
        },
      ];
      for (const { name, path = "/api/verify", headers, body } of cases) {
        const init = {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
        };
        const fast = await describeAnswer(await fetch(`${server.url}${path}`, init));
        const framework = await describeAnswer(await identity.app.request(path, init));
        assert.deepEqual(fast, framework, name);
      }
    });

    it("leaves every other method and path to the framework", async () => {
      const get = await fetch(`${server.url}/api/verify`);
      assert.equal(get.status, 404);
      assert.deepEqual(await get.json(), { error: "Not found" });
      const trailing = await fetch(`${server.url}/api/verify/`, { method: "POST" });
      assert.equal(trailing.status, 404);
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    });
  });
}
