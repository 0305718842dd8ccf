import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

// Headers of the connection, not of the answer.
const TRANSPORT = new Set(["date", "connection", "keep-alive", "content-length"]);
/** What the test server answers when the fast path passes a request on. */
const PASSED_ON = 599;

async function describeAnswer(response: Response) {
  const headers = [...response.headers]
    .filter(([name]) => !TRANSPORT.has(name))
    .sort(([a], [b]) => a.localeCompare(b));
  return { status: response.status, headers, body: await response.text() };
}

for (const engine of testEngines()) {
  describe(`POST /api/verify and /api/session-tokens through the node:http fast path (${engine})`, () => {
    let identity: TestIdentity;
    let server: Server;
    let url: string;
    let partner: Awaited<ReturnType<TestIdentity["partner"]>>;
    let token: string;

    before(async () => {
      identity = await openTestIdentity(engine);
      // The fast path alone: whatever it passes on is answered 599, so a test sees which it took.
      server = createServer((request, response) => {
        if (!identity.service.fastPath(request, response)) response.writeHead(PASSED_ON).end();
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      partner = await identity.partner();
      const { key } = await identity.userKey();
      token = await identity.token(key);
    });
    after(async () => {
      await new Promise((resolve) => server.close(resolve));
      await identity.close();
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
        const fast = await describeAnswer(await fetch(`${url}${path}`, init));
        const framework = await describeAnswer(await identity.app.request(path, init));
        assert.notEqual(fast.status, PASSED_ON, `${name} should be answered on the fast path`);
        assert.deepEqual(fast, framework, name);
      }
    });

    it("mints with the same status, headers and body as the Hono route", async () => {
      const userKey = await identity.userKey();
      const revoked = await identity.userKey();
      await identity.ctx.store.revokeKey("user_keys", revoked.id, identity.now());
      const bearer = `Bearer ${userKey.key}`;
      const cases: {
        name: string;
        path?: string;
        headers: Record<string, string>;
        body?: string;
      }[] = [
        { name: "no body", headers: { authorization: bearer } },
        { name: "empty object", headers: { authorization: bearer }, body: "{}" },
        {
          name: "query string",
          path: "/api/session-tokens?x=1",
          headers: { authorization: bearer },
        },
        {
          name: "bound to a partner",
          headers: { authorization: bearer },
          body: JSON.stringify({ audience: partner.id }),
        },
        { name: "null audience", headers: { authorization: bearer }, body: '{"audience":null}' },
        {
          name: "unknown partner",
          headers: { authorization: bearer },
          body: JSON.stringify({ audience: crypto.randomUUID() }),
        },
        { name: "audience not a UUID", headers: { authorization: bearer }, body: '{"audience":7}' },
        { name: "not JSON", headers: { authorization: bearer }, body: "{nope" },
        { name: "array body", headers: { authorization: bearer }, body: "[]" },
        { name: "no authorization", headers: {} },
        { name: "empty bearer", headers: { authorization: "Bearer " } },
        { name: "basic scheme", headers: { authorization: `Basic ${userKey.key}` } },
        { name: "unknown user key", headers: { authorization: "Bearer apu_unknown" } },
        { name: "revoked user key", headers: { authorization: `Bearer ${revoked.key}` } },
        {
          name: "too large",
          headers: { authorization: bearer },
          body: JSON.stringify({ pad: "x".repeat(70_000) }),
        },
      ];
      for (const { name, path = "/api/session-tokens", headers, body } of cases) {
        const init = {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
        };
        const fast = await describeAnswer(await fetch(`${url}${path}`, { ...init, body }));
        const framework = await describeAnswer(await identity.app.request(path, { ...init, body }));
        assert.notEqual(fast.status, PASSED_ON, `${name} should be answered on the fast path`);
        // Each mint is a new token and one more counted against the key: compare the rest.
        assert.deepEqual(withoutMintedParts(fast), withoutMintedParts(framework), name);
        if (fast.status === 201) {
          assert.match(JSON.parse(fast.body).sessionToken, /^aps_/);
          assert.equal(remaining(fast), remaining(framework) + 1, name);
        }
      }
    });

    it("passes every other method and path on to the framework", async () => {
      const others: [string, string][] = [
        ["GET", "/api/verify"],
        ["POST", "/api/verify/"],
        ["POST", "/api/%76erify"],
        ["GET", "/api/session-tokens"],
        ["POST", "/api/session-tokens/"],
        ["GET", "/healthz"],
      ];
      for (const [method, path] of others) {
        const response = await fetch(`${url}${path}`, { method });
        assert.equal(response.status, PASSED_ON, `${method} ${path}`);
      }
    });
  });
}

type Answer = Awaited<ReturnType<typeof describeAnswer>>;

function withoutMintedParts(answer: Answer) {
  if (answer.status !== 201) return answer;
  const { sessionToken: _, ...body } = JSON.parse(answer.body);
  return {
    ...answer,
    headers: answer.headers.filter(([name]) => name !== "ratelimit-remaining"),
    body,
  };
}

function remaining(answer: Answer): number {
  return Number(answer.headers.find(([name]) => name === "ratelimit-remaining")?.[1]);
}
