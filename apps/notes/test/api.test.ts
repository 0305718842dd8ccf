import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

describe("notes API: public index and documentation", () => {
  let notes: TestNotes;
  before(async () => {
    notes = await openTestNotes("sqlite");
  });
  after(() => notes.close());

  it("GET /api lists every endpoint with how to authenticate, without a token", async () => {
    const response = await notes.call(null, "GET", "/api");
    assert.equal(response.status, 200);
    const index = (await response.json()) as {
      authentication: { header: string; example: string };
      endpoints: { method: string; path: string; description: string; auth: string }[];
    };
    assert.equal(index.authentication.header, "x-session-token");
    assert.match(index.authentication.example, /\$\(agentpass token\)/);
    const listed = index.endpoints.map((e) => `${e.method} ${e.path}`);
    for (const endpoint of [
      "GET /api",
      "GET /api/notes",
      "GET /api/notes/:id",
      "POST /api/notes",
      "PATCH /api/notes/:id",
      "DELETE /api/notes/:id",
      "GET /api/tags",
      "POST /api/tags",
      "PATCH /api/tags/:id",
      "DELETE /api/tags/:id",
    ]) {
      assert.ok(listed.includes(endpoint), endpoint);
    }
    assert.ok(listed.includes("POST /mcp"), "POST /mcp");
    for (const endpoint of index.endpoints) {
      assert.ok(endpoint.description.length > 0);
      const expected =
        endpoint.path === "/api" || endpoint.path.startsWith("/.well-known/")
          ? "none"
          : endpoint.path === "/mcp"
            ? "Authorization: Bearer $(agentpass token --audience <notes partner id>)"
            : "x-session-token: $(agentpass token)";
      assert.equal(endpoint.auth, expected, endpoint.path);
    }
  });

  it("serves OpenAPI 3.1 with every message and code, and the rendered reference", async () => {
    const document = (await (await notes.call(null, "GET", "/api/openapi.json")).json()) as {
      openapi: string;
      paths: Record<string, Record<string, { parameters: { name: string }[] }>>;
    };
    assert.equal(document.openapi, "3.1.0");
    assert.deepEqual(document.paths["/api/notes"]?.get?.parameters.map((p) => p.name).sort(), [
      "limit",
      "offset",
      "search",
      "tagId",
    ]);
    const text = JSON.stringify(document);
    for (const message of [
      "Invalid query parameters",
      "Request body must be valid JSON",
      "Invalid request body",
      "Note not found",
      "Invalid note id",
      "Tag already exists",
    ]) {
      assert.ok(text.includes(message), message);
    }
    for (const code of ["invalid_query", "note_not_found", "tag_exists", "session_token_invalid"]) {
      assert.ok(text.includes(`"${code}"`), code);
    }
    assert.match(text, /x-session-token/);
    // The reference page renders the document with Swagger UI, served from its npm package.
    const docs = await notes.call(null, "GET", "/docs");
    assert.equal(docs.status, 200);
    const page = await docs.text();
    for (const asset of [...page.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)].map((m) => m[1])) {
      assert.equal((await notes.call(null, "GET", asset as string)).status, 200, asset);
    }
  });

  it("answers health, readiness and unknown paths", async () => {
    assert.equal((await notes.call(null, "GET", "/healthz")).status, 200);
    assert.deepEqual(await (await notes.call(null, "GET", "/readyz")).json(), {
      ok: true,
      database: true,
    });
    const unknown = await notes.call(null, "GET", "/nope");
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), { error: "Not found", code: "not_found" });
  });
});
