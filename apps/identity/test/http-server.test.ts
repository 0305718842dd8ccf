import assert from "node:assert/strict";
import { request } from "node:http";
import { after, before, describe, it } from "node:test";
import { type RunningServer, startServer } from "@agentpass/http";
import { openTestIdentity, type TestIdentity } from "./support/harness.ts";

/** Sends raw bytes over a real socket, optionally chunked (no Content-Length). */
function post(
  url: string,
  path: string,
  headers: Record<string, string>,
  chunks: (string | Buffer)[],
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: "POST", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (part: string) => {
        body += part;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe("the identity service on a real port", () => {
  let identity: TestIdentity;
  let server: RunningServer;
  let partnerKey: string;
  let token: string;

  before(async () => {
    identity = await openTestIdentity("sqlite");
    server = await startServer(identity.service, { port: 0, host: "127.0.0.1" });
    partnerKey = (await identity.partner()).key;
    const account = await identity.account("chunks@example.com");
    token = await identity.token((await identity.userKey(account.id)).key);
  });
  after(async () => {
    await server.close(); // closes the service too
    await identity.database.drop();
  });

  const auth = () => ({
    authorization: `Bearer ${partnerKey}`,
    "content-type": "application/json",
  });

  it("verifies a token sent in several chunks", async () => {
    const body = JSON.stringify({ sessionToken: token });
    const response = await post(server.url, "/api/verify", auth(), [
      body.slice(0, 10),
      body.slice(10),
    ]);
    assert.equal(response.status, 200);
    assert.deepEqual(JSON.parse(response.body), { email: "chunks@example.com" });
    assert.equal(response.headers["x-content-type-options"], "nosniff");
  });

  it("answers 413 to a chunked body over 64 KiB without a Content-Length", async () => {
    const chunk = Buffer.alloc(16 * 1024, "a");
    const response = await post(server.url, "/api/verify", auth(), [
      chunk,
      chunk,
      chunk,
      chunk,
      chunk,
    ]);
    assert.equal(response.status, 413);
    assert.deepEqual(JSON.parse(response.body), { error: "Request body too large" });
  });

  it("answers 413 at once to a declared Content-Length over 64 KiB", async () => {
    const body = Buffer.alloc(70_000, "a");
    const response = await post(
      server.url,
      "/api/verify",
      { ...auth(), "content-length": String(body.length) },
      [body],
    );
    assert.equal(response.status, 413);
  });

  it("treats invalid UTF-8 as a body that is not JSON", async () => {
    const response = await post(server.url, "/api/verify", auth(), [
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
    ]);
    assert.equal(response.status, 400);
    assert.deepEqual(JSON.parse(response.body), { error: "Invalid JSON body" });
  });
});
