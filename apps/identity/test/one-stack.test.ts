import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, type TestDatabase } from "@agentpass/db/testing";
import pino from "pino";
import { loadConfig } from "../src/config.ts";
import { type IdentityService, openIdentityService } from "../src/service.ts";

const PAGE = { accept: "text/html,application/xhtml+xml" };

/** A service whose log lines at `info` are kept, to read its access log. */
async function openLoggedService(database: TestDatabase) {
  const loaded = loadConfig({
    DATA_DIR: database.dataDir,
    DATABASE_URL: database.databaseUrl ?? "",
    LOG_LEVEL: "info",
  });
  if (!loaded.ok) throw new Error(loaded.error);
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const service = await openIdentityService(loaded.config, { logger });
  return { service, lines };
}

describe("one HTTP stack serves the API endpoints and the pages", () => {
  let database: TestDatabase;
  let service: IdentityService;
  let lines: Record<string, unknown>[];
  before(async () => {
    database = await createTestDatabase("sqlite");
    ({ service, lines } = await openLoggedService(database));
  });
  after(async () => {
    await service.close();
    await database.drop();
  });

  /** The answer, and the access-log lines written under its request id. */
  async function ask(path: string, init: RequestInit = {}) {
    const response = await service.request(path, init);
    await response.arrayBuffer();
    const requestId = response.headers.get("x-request-id");
    const logged = lines.filter((line) => line.msg === "request" && line.requestId === requestId);
    return { response, requestId, logged };
  }

  it("logs one access line per request, naming the route's template, under the answer's request id", async () => {
    const cases = [
      { path: "/api/partners", init: {}, route: "/api/partners", status: 200 },
      { path: "/sign-in", init: { headers: PAGE }, route: "/sign-in", status: 200 },
      { path: "/assets/style.css", init: {}, route: "/assets/style.css", status: 200 },
      {
        path: "/keys/key-in-the-path/revoke?next=secret-in-the-query",
        init: { headers: PAGE },
        route: "/keys/{keyId}/revoke",
        status: 303,
      },
      { path: "/sign-in", init: { method: "PUT", headers: PAGE }, route: "/sign-in", status: 405 },
      { path: "/no-such-page", init: { headers: PAGE }, route: "(unknown)", status: 404 },
    ];
    for (const { path, init, route, status } of cases) {
      const { response, requestId, logged } = await ask(path, init);
      assert.equal(response.status, status, path);
      assert.match(requestId ?? "", /^[0-9a-f-]{36}$/, path);
      assert.equal(response.headers.get("x-content-type-options"), "nosniff", path);
      assert.equal(logged.length, 1, `${path}: one access-log line`);
      assert.equal(logged[0]?.route, route, path);
      assert.equal(logged[0]?.status, status, path);
    }
    const log = JSON.stringify(lines);
    assert.ok(!log.includes("key-in-the-path"), "the path's own values were logged");
    assert.ok(!log.includes("secret-in-the-query"), "the query was logged");
  });

  it("names Allow on a page path as on an API path: the methods the path answers", async () => {
    const page = await ask("/sign-in", { method: "DELETE" });
    assert.equal(page.response.status, 405);
    assert.equal(page.response.headers.get("allow"), "GET, HEAD, POST");
    const api = await ask("/api/partners", { method: "DELETE" });
    assert.equal(api.response.status, 405);
    assert.equal(api.response.headers.get("allow"), "GET, HEAD, OPTIONS");
    // CORS is for the API: a path only pages serve answers no preflight, and does not list it.
    assert.equal((await ask("/api/partners", { method: "OPTIONS" })).response.status, 204);
    assert.equal((await ask("/sign-in", { method: "OPTIONS" })).response.status, 405);
  });

  it("renders a refusal on a page path or an unknown path the same way: a page for a browser, JSON otherwise", async () => {
    const signIn = await ask("/sign-in", { headers: PAGE });
    for (const init of [{ headers: PAGE }, { method: "PUT", headers: PAGE }]) {
      const { response } = await ask(init.method ? "/sign-in" : "/no-such-page", init);
      assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
      assert.equal(
        response.headers.get("content-security-policy"),
        signIn.response.headers.get("content-security-policy"),
        "an error page carries the pages' headers",
      );
    }
    const json = await service.request("/sign-in", { method: "PUT" });
    assert.deepEqual(await json.json(), {
      error: "Method not allowed",
      code: "method_not_allowed",
    });
  });
});

describe("one device flow (RFC 8628) behind /oauth/* and its /api/device/* aliases", () => {
  let database: TestDatabase;
  let service: IdentityService;
  before(async () => {
    database = await createTestDatabase("sqlite");
    ({ service } = await openLoggedService(database));
  });
  after(async () => {
    await service.close();
    await database.drop();
  });

  const FORM = { "content-type": "application/x-www-form-urlencoded" };
  const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
  const post = async (path: string, body: string) => {
    const response = await service.request(path, { method: "POST", headers: FORM, body });
    return { response, body: (await response.json()) as Record<string, unknown> };
  };
  const noStore = (response: Response) => [
    response.headers.get("cache-control"),
    response.headers.get("pragma"),
  ];

  it("answers both starts and both polls with Cache-Control: no-store and Pragma: no-cache", async () => {
    const starts = [
      await post("/oauth/device_authorization", "client_id=agentpass-cli&client_name=laptop"),
      await post("/api/device/code", "client_name=laptop"),
    ];
    for (const { response, body } of starts) {
      assert.equal(response.status, 200);
      assert.deepEqual(noStore(response), ["no-store", "no-cache"]);
      const deviceCode = String(body.device_code);
      const polls = [
        await post(
          "/oauth/token",
          `grant_type=${DEVICE_GRANT}&client_id=agentpass-cli&device_code=${deviceCode}`,
        ),
        await post("/api/device/token", `device_code=${deviceCode}`),
      ];
      // A login started at either URL is the same login, polled at either.
      assert.deepEqual(
        polls.map((poll) => [poll.response.status, poll.body.error, ...noStore(poll.response)]),
        [
          [400, "authorization_pending", "no-store", "no-cache"],
          [400, "slow_down", "no-store", "no-cache"],
        ],
      );
    }
  });

  it("reads both with one form reader: a field sent twice is refused", async () => {
    const refused = [
      await post("/oauth/device_authorization", "client_id=agentpass-cli&client_id=other"),
      await post("/api/device/code", "client_name=a&client_name=b"),
      await post("/oauth/token", `grant_type=${DEVICE_GRANT}&device_code=a&device_code=b`),
      await post("/api/device/token", "device_code=a&device_code=b"),
    ];
    assert.deepEqual(
      refused.map(({ response }) => response.status),
      [400, 400, 400, 400],
    );
    assert.equal(refused[0]?.body.error_description, "client_id is repeated");
    assert.equal(refused[2]?.body.error_description, "device_code is repeated");
  });

  it("answers a body over 8 KiB with the same 413 on all four", async () => {
    const large = `device_code=${"x".repeat(9000)}`;
    for (const path of [
      "/oauth/device_authorization",
      "/oauth/token",
      "/api/device/code",
      "/api/device/token",
    ]) {
      const { response, body } = await post(path, large);
      assert.equal(response.status, 413, path);
      assert.deepEqual(body, {
        error: "invalid_request",
        error_description: "Request body too large",
      });
      assert.deepEqual(noStore(response), ["no-store", "no-cache"], path);
    }
  });
});
