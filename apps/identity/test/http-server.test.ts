import assert from "node:assert/strict";
import { request } from "node:http";
import { connect } from "node:net";
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

/**
 * Sends a request with no body at all (neither Content-Length nor Transfer-Encoding, as an
 * HTTP client may for a bare POST) over a raw socket, and returns the answer's status and body.
 */
function postWithoutBody(
  url: string,
  path: string,
  authorization: string,
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.end(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${authorization}\r\nConnection: close\r\n\r\n`,
      );
    });
    let raw = "";
    socket.setEncoding("utf8");
    socket.on("data", (part: string) => {
      raw += part;
    });
    socket.on("error", reject);
    socket.on("end", () => {
      const [head = "", body = ""] = raw.split("\r\n\r\n");
      resolve({ status: Number(head.split(" ")[1]), body });
    });
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

  let userKey: string;
  before(async () => {
    const account = await identity.account("bodyless@example.com");
    userKey = (await identity.userKey(account.id)).key;
  });

  // A body reader must finish on a request whose body is empty, not wait for bytes.
  it("answers a POST that has no body at all, at a plain and at a percent-encoded path", async () => {
    for (const path of ["/api/session-tokens", "/api/session-%74okens"]) {
      const minted = await postWithoutBody(server.url, path, `Bearer ${userKey}`);
      assert.equal(minted.status, 201, path);
      assert.match(JSON.parse(minted.body).sessionToken, /^aps_/);
    }
    for (const path of ["/api/verify", "/api/%76erify"]) {
      const verified = await postWithoutBody(server.url, path, `Bearer ${partnerKey}`);
      assert.equal(verified.status, 400, path);
      assert.deepEqual(JSON.parse(verified.body), {
        error: "Invalid JSON body",
        code: "invalid_json_body",
      });
    }
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
    assert.deepEqual(JSON.parse(response.body), {
      error: "Request body too large",
      code: "body_too_large",
    });
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
    assert.deepEqual(JSON.parse(response.body), {
      error: "Invalid JSON body",
      code: "invalid_json_body",
    });
  });
});
