import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openTestIdentity } from "./support/harness.ts";

describe("health, documentation and unknown routes", () => {
  it("answers /healthz and /readyz", async () => {
    const identity = await openTestIdentity("sqlite");
    try {
      assert.deepEqual(await (await identity.app.request("/healthz")).json(), { ok: true });
      const ready = await identity.app.request("/readyz");
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { ok: true, database: true });
    } finally {
      await identity.close();
    }
  });

  it("serves an OpenAPI 3.1 document naming every endpoint and every verify message", async () => {
    const identity = await openTestIdentity("sqlite");
    try {
      const document = (await (await identity.app.request("/api/openapi.json")).json()) as {
        openapi: string;
        paths: Record<string, unknown>;
      };
      assert.equal(document.openapi, "3.1.0");
      assert.deepEqual(Object.keys(document.paths).sort(), [
        "/.well-known/agent-configuration",
        "/.well-known/oauth-authorization-server",
        "/agent/introspect",
        "/agent/reactivate",
        "/agent/register",
        "/agent/request-capability",
        "/agent/revoke",
        "/agent/rotate-key",
        "/agent/status",
        "/api/device/code",
        "/api/device/token",
        "/api/partners",
        "/api/session-tokens",
        "/api/verify",
        "/capability/authorize",
        "/capability/describe",
        "/capability/list",
        "/healthz",
        "/host/revoke",
        "/host/rotate-key",
        "/oauth/authorize",
        "/oauth/device_authorization",
        "/oauth/introspect",
        "/oauth/register",
        "/oauth/revoke",
        "/oauth/token",
        "/partner/capabilities",
        "/readyz",
      ]);
      const text = JSON.stringify(document.paths["/api/verify"]);
      for (const message of [
        "Invalid JSON body",
        "Missing or invalid sessionToken",
        "Missing or invalid partner key",
        "Missing partner key",
        "Invalid partner key",
        "Invalid or expired session token",
        "Partner key has been revoked",
      ]) {
        assert.ok(text.includes(message), message);
      }
      // The reference page renders the document with Swagger UI, served from its npm package.
      const docs = await identity.app.request("/docs");
      assert.equal(docs.status, 200);
      const page = await docs.text();
      for (const asset of [...page.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((m) => m[1])) {
        const served = await identity.app.request(asset as string);
        assert.equal(served.status, 200, asset);
        assert.ok((await served.arrayBuffer()).byteLength > 0, asset);
      }
      assert.match(page, /swagger-ui-bundle\.js/);
    } finally {
      await identity.close();
    }
  });

  it("answers unknown routes 404 with a JSON error", async () => {
    const identity = await openTestIdentity("sqlite");
    try {
      const response = await identity.app.request("/api/nope");
      assert.equal(response.status, 404);
      assert.deepEqual(await response.json(), { error: "Not found", code: "not_found" });
      assert.equal((await identity.app.request("/api/verify/x")).status, 404);
    } finally {
      await identity.close();
    }
  });
});

describe("an unexpected server error", () => {
  it("answers 500 with a request id and no stack trace, and /readyz says not ready", async () => {
    const identity = await openTestIdentity("sqlite");
    const partner = await identity.partner();
    await identity.db.destroy(); // the database goes away under the running app
    const response = await identity.verify(
      `Bearer ${partner.key}`,
      JSON.stringify({ sessionToken: "aps_x" }),
    );
    assert.equal(response.status, 500);
    const json = (await response.json()) as { error: string; requestId: string };
    assert.equal(json.error, "Internal server error");
    assert.match(json.requestId, /^[0-9a-f-]{36}$/);
    assert.equal(response.headers.get("x-request-id"), json.requestId);
    assert.deepEqual(Object.keys(json).sort(), ["code", "error", "requestId"]);
    assert.equal((await identity.app.request("/readyz")).status, 503);
    await identity.service.close().catch(() => {});
    await identity.database.drop();
  });
});
