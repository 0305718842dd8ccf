import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { AUTHENTICATED_ENDPOINTS } from "./support/endpoints.ts";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

const PUBLIC_URL = "https://notes.example";
const API_METADATA = `${PUBLIC_URL}/.well-known/oauth-protected-resource`;
const MCP_METADATA = `${API_METADATA}/mcp`;
/** The challenges after Bearer: the x-session-token one, then AgentPass's Agent Auth discovery. */
let LEGACY = 'AgentPass-Session header="x-session-token"';

/** What the challenge of a 401 for a good token without an account says instead of an error. */
const NO_ACCOUNT =
  'error_description="The token is valid, but no account here has its email: the notes API\'s admin must add one"';

/** The challenge of a 401 (or of the 400 for two tokens) at a resource. */
function challenge(metadata: string, error?: string): string {
  const bearer = `Bearer resource_metadata="${metadata}"`;
  if (error === NO_ACCOUNT) return `${bearer}, ${NO_ACCOUNT}, ${LEGACY}`;
  return `${error ? `${bearer}, error="${error}"` : bearer}, ${LEGACY}`;
}

const ENDPOINTS = AUTHENTICATED_ENDPOINTS;

/** What the metadata says of DPoP (RFC 9449 section 5.1): AgentPass's algorithms, Bearer too. */
const DPOP_METADATA = {
  dpop_signing_alg_values_supported: ["ES256", "EdDSA", "Ed25519", "ES384", "PS256", "RS256"],
  dpop_bound_access_tokens_required: false,
};

for (const engine of testEngines()) {
  describe(`notes API as an OAuth resource server (${engine})`, () => {
    let notes: TestNotes;

    before(async () => {
      notes = await openTestNotes(engine, {}, { PUBLIC_URL });
      LEGACY = `AgentPass-Session header="x-session-token", AgentAuth discovery="${notes.identity.url}/.well-known/agent-configuration"`;
    });
    after(() => notes.close());

    /** One request with the given headers and, but for GET and DELETE, a JSON body. */
    function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
      const bodyless = body === undefined || method === "GET" || method === "DELETE";
      return notes.app.request(path, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: bodyless ? undefined : JSON.stringify(body),
      });
    }

    it("takes the session token as Authorization: Bearer on every endpoint", async () => {
      const person = await notes.person();
      const bearer = { authorization: `Bearer ${person.token}` };
      const tag = await send("POST", "/api/tags", bearer, { name: "work" });
      assert.equal(tag.status, 201);
      const { tag: created } = (await tag.json()) as { tag: { id: string } };
      const note = await send("POST", "/api/notes", bearer, {
        title: "Kubernetes upgrade",
        tagIds: [created.id],
      });
      assert.equal(note.status, 201);
      const { note: made } = (await note.json()) as { note: { id: string } };
      assert.equal((await send("GET", `/api/notes/${made.id}`, bearer)).status, 200);
      const page = await send("GET", "/api/notes?search=kube", bearer);
      assert.equal(((await page.json()) as { total: number }).total, 1);
      const patched = await send("PATCH", `/api/notes/${made.id}`, bearer, { title: "Done" });
      assert.equal(patched.status, 200);
      assert.equal((await send("GET", "/api/tags", bearer)).status, 200);
      assert.equal(
        (await send("PATCH", `/api/tags/${created.id}`, bearer, { name: "x" })).status,
        200,
      );
      assert.equal((await send("DELETE", `/api/tags/${created.id}`, bearer)).status, 204);
      assert.equal((await send("DELETE", `/api/notes/${made.id}`, bearer)).status, 204);
    });

    it("takes the same token in both headers", async () => {
      const person = await notes.person();
      const both = { authorization: `Bearer ${person.token}`, "x-session-token": person.token };
      assert.equal((await send("GET", "/api/notes", both)).status, 200);
    });

    it("answers 400 invalid_request when the two headers carry different tokens, and writes nothing", async () => {
      const ada = await notes.person();
      const bob = await notes.person();
      const both = { authorization: `Bearer ${ada.token}`, "x-session-token": bob.token };
      for (const [method, path] of ENDPOINTS) {
        const answer = await send(method, path, both, { title: "t", name: "n" });
        assert.equal(answer.status, 400, `${method} ${path}`);
        assert.equal(
          answer.headers.get("www-authenticate"),
          challenge(API_METADATA, "invalid_request"),
        );
        assert.equal(((await answer.json()) as { code: string }).code, "invalid_request");
      }
      for (const person of [ada, bob]) {
        const page = (await (await person.call("GET", "/api/notes")).json()) as { total: number };
        assert.equal(page.total, 0);
      }
    });

    it("counts a bare Bearer or another scheme as no token", async () => {
      for (const authorization of ["Bearer", "Bearer   ", "Basic YTpi"]) {
        const answer = await send("GET", "/api/notes", { authorization });
        assert.equal(answer.status, 401);
        assert.equal(((await answer.json()) as { code: string }).code, "session_token_missing");
      }
    });

    it("names the resource metadata in every 401's challenge, with invalid_token for a bad token, never for a good one without an account", async () => {
      const stranger = await notes.person(undefined, false);
      const expired = await notes.person();
      notes.advance(300_000);
      try {
        const cases: [Record<string, string>, string, string | undefined][] = [
          [{}, "session_token_missing", undefined],
          [{ "x-session-token": "aps_forged" }, "session_token_invalid", "invalid_token"],
          [{ authorization: "Bearer aps_forged" }, "session_token_invalid", "invalid_token"],
          [{ authorization: `Bearer ${expired.token}` }, "session_token_invalid", "invalid_token"],
          [{ "x-session-token": await notes.mint(stranger.key) }, "no_account", NO_ACCOUNT],
        ];
        for (const [headers, code, error] of cases) {
          for (const [method, path] of ENDPOINTS) {
            const answer = await send(method, path, headers, { title: "t", name: "n" });
            assert.equal(answer.status, 401, `${method} ${path} ${code}`);
            assert.equal(answer.headers.get("www-authenticate"), challenge(API_METADATA, error));
            assert.equal(((await answer.json()) as { code: string }).code, code);
          }
        }
      } finally {
        notes.advance(-300_000);
      }
    });

    it("challenges at /mcp with the metadata of /mcp", async () => {
      const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: {} };
      const missing = await send("POST", "/mcp", {}, initialize);
      assert.equal(missing.status, 401);
      assert.equal(missing.headers.get("www-authenticate"), challenge(MCP_METADATA));
      const both = { authorization: "Bearer aps_a", "x-session-token": "aps_b" };
      const conflict = await send("POST", "/mcp", both, initialize);
      assert.equal(conflict.status, 400);
      assert.equal(
        conflict.headers.get("www-authenticate"),
        challenge(MCP_METADATA, "invalid_request"),
      );
    });

    it("serves the protected resource metadata of the API and of /mcp to any origin", async () => {
      const documents: [string, Record<string, unknown>][] = [
        [
          "/.well-known/oauth-protected-resource",
          {
            resource: PUBLIC_URL,
            authorization_servers: [notes.identity.url],
            bearer_methods_supported: ["header"],
            resource_name: "AgentPass reference notes API",
            resource_documentation: `${PUBLIC_URL}/docs`,
            ...DPOP_METADATA,
          },
        ],
        [
          "/.well-known/oauth-protected-resource/mcp",
          {
            resource: `${PUBLIC_URL}/mcp`,
            authorization_servers: [notes.identity.url],
            bearer_methods_supported: ["header"],
            resource_name: "AgentPass reference notes API (MCP)",
            resource_documentation: `${PUBLIC_URL}/docs`,
            ...DPOP_METADATA,
          },
        ],
      ];
      for (const [path, document] of documents) {
        const answer = await notes.app.request(path, {
          headers: { origin: "https://app.example" },
        });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get("access-control-allow-origin"), "*");
        assert.deepEqual(await answer.json(), document);
        const preflight = await notes.app.request(path, {
          method: "OPTIONS",
          headers: { origin: "https://app.example", "access-control-request-method": "GET" },
        });
        assert.equal(preflight.status, 204);
        assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
      }
    });

    it("lists /mcp and the metadata documents in the index, with the credential each takes", async () => {
      const index = (await (await notes.app.request("/api")).json()) as {
        endpoints: { method: string; path: string; auth: string }[];
      };
      const byPath = new Map(index.endpoints.map((endpoint) => [endpoint.path, endpoint]));
      assert.equal(
        byPath.get("/mcp")?.auth,
        "Authorization: Bearer $(agentpass token --audience <notes partner id>)",
      );
      assert.equal(byPath.get("/.well-known/oauth-protected-resource")?.auth, "none");
      assert.equal(byPath.get("/.well-known/oauth-protected-resource/mcp")?.auth, "none");
      assert.equal(byPath.get("/api/notes")?.auth, "x-session-token: $(agentpass token)");
      const about = (await (await notes.app.request("/api")).json()) as {
        authentication: { description: string };
      };
      assert.match(about.authentication.description, /Authorization: Bearer/);
    });

    it("offers both credentials in the OpenAPI document", async () => {
      const document = (await (await notes.app.request("/api/openapi.json")).json()) as {
        components: { securitySchemes: Record<string, unknown> };
        paths: Record<string, Record<string, { security: unknown }>>;
      };
      assert.deepEqual(Object.keys(document.components.securitySchemes).sort(), [
        "agentJwt",
        "bearerToken",
        "boundToken",
        "sessionToken",
      ]);
      assert.deepEqual(document.paths["/api/notes"]?.get?.security, [
        { sessionToken: [] },
        { bearerToken: [] },
      ]);
      // MCP's endpoint is documented too, taking only the token bound to the notes API.
      assert.deepEqual(document.paths["/mcp"]?.post?.security, [{ boundToken: [] }]);
      // Capabilities execute with an agent's own JWT for their location.
      assert.deepEqual(document.paths["/agent/execute"]?.post?.security, [{ agentJwt: [] }]);
    });
  });
}
