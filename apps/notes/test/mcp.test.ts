import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, McpError } from "@modelcontextprotocol/sdk/types.js";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

const PUBLIC_URL = "https://notes.example";
const MCP_CHALLENGE = `Bearer resource_metadata="${PUBLIC_URL}/.well-known/oauth-protected-resource/mcp"`;
/** The challenges after Bearer: the x-session-token one, then AgentPass's Agent Auth discovery. */
let LEGACY = 'AgentPass-Session header="x-session-token"';
const TOOLS = [
  "create_note",
  "create_tag",
  "delete_note",
  "delete_tag",
  "get_note",
  "list_notes",
  "list_tags",
  "rename_tag",
  "search_notes",
  "update_note",
];
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: "raw", version: "1" },
  },
};

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
}
interface NoteJson {
  id: string;
  title: string;
  contentText: string;
  tags: { id: string; name: string }[];
}

for (const engine of testEngines()) {
  describe(`notes API as an MCP server (${engine})`, () => {
    let notes: TestNotes;
    let server: RunningServer;
    const clients: Client[] = [];

    before(async () => {
      notes = await openTestNotes(engine, {}, { PUBLIC_URL });
      LEGACY = `AgentPass-Session header="x-session-token", AgentAuth discovery="${notes.identity.url}/.well-known/agent-configuration"`;
      // A real port, as an MCP client meets it; the harness closes the service itself.
      server = await startServer(
        { listener: notes.service.listener, close: async () => {} },
        { port: 0, host: "127.0.0.1" },
      );
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.close()));
      await server.close();
      await notes.close();
    });

    /** A person with a notes account and a token bound to the notes API. */
    async function boundPerson() {
      const person = await notes.person();
      return { ...person, bound: await notes.mint(person.key, notes.partner.id) };
    }

    /** The SDK's client, connected over Streamable HTTP with `token` as Bearer. */
    async function connect(token: string): Promise<Client> {
      const client = new Client({ name: "notes-test", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    }

    /** Calls a tool; the answer as the SDK's client returns it. */
    async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
      return (await client.callTool({ name, arguments: args })) as ToolAnswer;
    }

    /** One raw POST to /mcp. */
    function post(headers: Record<string, string>, body: unknown = INITIALIZE) {
      return fetch(`${server.url}/mcp`, {
        method: "POST",
        headers: {
          accept: "application/json, text/event-stream",
          "content-type": "application/json",
          ...headers,
        },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    }

    it("lists every tool with input and output schemas and annotations", async () => {
      const client = await connect((await boundPerson()).bound);
      assert.equal(client.getServerVersion()?.name, "agentpass-notes");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((tool) => tool.name).sort(), TOOLS);
      for (const tool of tools) {
        assert.equal(tool.inputSchema.type, "object", tool.name);
        assert.equal(tool.outputSchema?.type, "object", tool.name);
        assert.equal(typeof tool.description, "string", tool.name);
        assert.equal(tool.annotations?.openWorldHint, false, tool.name);
      }
      const hints = Object.fromEntries(
        tools.map((tool) => [
          tool.name,
          [
            tool.annotations?.readOnlyHint,
            tool.annotations?.destructiveHint,
            tool.annotations?.idempotentHint,
          ],
        ]),
      );
      assert.deepEqual(hints.search_notes, [true, undefined, undefined]);
      assert.deepEqual(hints.create_note, [false, false, false]);
      assert.deepEqual(hints.update_note, [false, true, true]);
      assert.deepEqual(hints.delete_note, [false, true, true]);
      assert.deepEqual(hints.delete_tag, [false, true, true]);
      const search = tools.find((tool) => tool.name === "search_notes");
      assert.deepEqual(search?.inputSchema.required, ["search"]);
      const list = tools.find((tool) => tool.name === "list_notes");
      assert.deepEqual(list?.inputSchema.properties?.limit, {
        default: 100,
        type: "integer",
        minimum: 1,
        maximum: 500,
      });
    });

    /** A tool's structured result, which must be a success (and its text the same JSON). */
    async function succeed<T>(client: Client, name: string, args: Record<string, unknown> = {}) {
      const answer = await call(client, name, args);
      assert.equal(answer.isError, undefined, answer.content[0]?.text);
      assert.ok(answer.structuredContent, `${name} answers structured content`);
      assert.deepEqual(JSON.parse(answer.content[0]?.text ?? ""), answer.structuredContent);
      return answer.structuredContent as T;
    }

    /** A tool's refusal: the REST API's `{ error, code }`, as the tool error's text. */
    async function refusal(client: Client, name: string, args: Record<string, unknown> = {}) {
      const answer = await call(client, name, args);
      assert.equal(answer.isError, true, `${name} answers a tool error`);
      return JSON.parse(answer.content[0]?.text ?? "") as { error: string; code: string };
    }

    type Page = { notes: NoteJson[]; total: number };

    it("creates, searches, gets, updates and deletes notes through tools, as REST sees them", async () => {
      const person = await boundPerson();
      const client = await connect(person.bound);
      const { tag } = await succeed<{ tag: { id: string } }>(client, "create_tag", { name: "ops" });
      const { note } = await succeed<{ note: NoteJson }>(client, "create_note", {
        title: "  Kubernetes upgrade plan ",
        contentText: "drain nodes, then upgrade",
        tagIds: [tag.id],
      });
      assert.equal(note.title, "Kubernetes upgrade plan");
      await succeed(client, "create_note", { title: "Groceries" });

      const found = await succeed<Page>(client, "search_notes", { search: "kube" });
      assert.deepEqual([found.total, found.notes[0]?.id], [1, note.id]);
      const tagged = await succeed<Page>(client, "list_notes", { tagId: tag.id });
      assert.equal(tagged.total, 1);
      const first = await succeed<Page>(client, "list_notes", { limit: 1 });
      assert.deepEqual([first.total, first.notes.length], [2, 1]);

      const fetched = await succeed(client, "get_note", { id: note.id });
      const rest = await person.call("GET", `/api/notes/${note.id}`);
      assert.deepEqual(fetched, await rest.json());

      const updated = await succeed<{ note: NoteJson }>(client, "update_note", {
        id: note.id,
        title: "Upgrade done",
      });
      assert.deepEqual(
        [updated.note.title, updated.note.contentText],
        ["Upgrade done", "drain nodes, then upgrade"],
      );
      const user = await notes.store.findUserByEmail(person.email.toLowerCase());
      assert.equal((await notes.store.getNote(user?.id ?? "", note.id))?.title, "Upgrade done");

      const deleted = await succeed(client, "delete_note", { id: note.id });
      assert.deepEqual(deleted, { id: note.id, deleted: true });
      assert.deepEqual(await refusal(client, "get_note", { id: note.id }), {
        error: "Note not found",
        code: "note_not_found",
      });
      assert.equal((await person.call("GET", `/api/notes/${note.id}`)).status, 404);
    });

    it("lists, creates, renames and deletes tags through tools", async () => {
      const client = await connect((await boundPerson()).bound);
      const { tag: work } = await succeed<{ tag: { id: string } }>(client, "create_tag", {
        name: "work",
      });
      await succeed(client, "create_tag", { name: "home" });
      assert.equal((await refusal(client, "create_tag", { name: "WORK" })).code, "tag_exists");
      const renamed = await succeed<{ tag: { name: string } }>(client, "rename_tag", {
        id: work.id,
        name: "job",
      });
      assert.equal(renamed.tag.name, "job");
      const listed = await succeed<{ tags: { name: string }[] }>(client, "list_tags");
      assert.deepEqual(
        listed.tags.map((tag) => tag.name),
        ["home", "job"],
      );
      assert.deepEqual(await succeed(client, "delete_tag", { id: work.id }), {
        id: work.id,
        deleted: true,
      });
      const missing = await refusal(client, "rename_tag", { id: work.id, name: "x" });
      assert.equal(missing.code, "tag_not_found");
    });

    it("answers bad input with a tool error that says what is wrong, and keeps serving", async () => {
      const client = await connect((await boundPerson()).bound);
      const cases: [string, Record<string, unknown>, RegExp][] = [
        ["create_note", { title: "   " }, /title/],
        ["create_note", {}, /title/],
        ["create_note", { title: "t", tagIds: ["nope"] }, /tagIds/],
        ["get_note", { id: "not-a-uuid" }, /id/],
        ["search_notes", {}, /search/],
        ["search_notes", { search: "a b c d e f g h i j k" }, /at most 10 terms/],
        ["list_notes", { limit: 501 }, /limit/],
        ["list_notes", { offset: -1 }, /offset/],
        ["rename_tag", { id: crypto.randomUUID(), name: "" }, /name/],
        ["update_note", { id: crypto.randomUUID(), title: "x\u0000" }, /NUL/],
      ];
      for (const [name, args, message] of cases) {
        const answer = await call(client, name, args);
        assert.equal(answer.isError, true, `${name} ${JSON.stringify(args)}`);
        assert.match(answer.content[0]?.text ?? "", message, name);
      }
      const deep = await post(
        { authorization: `Bearer ${(await boundPerson()).bound}` },
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_note","arguments":{"title":"t","content":${"[".repeat(100)}${"]".repeat(100)}}}}`,
      );
      assert.equal(deep.status, 400);
      const unknown = await call(client, "no_such_tool");
      assert.equal(unknown.isError, true);
      assert.equal((await call(client, "list_notes")).isError, undefined, "still serving");
    });

    it("reads notes as resources, listed newest first, by template note://{id}", async () => {
      const person = await boundPerson();
      const client = await connect(person.bound);
      const { note: first } = await succeed<{ note: NoteJson }>(client, "create_note", {
        title: "First",
      });
      notes.advance(1);
      const { note: second } = await succeed<{ note: NoteJson }>(client, "create_note", {
        title: "Second",
      });
      const { resources } = await client.listResources();
      assert.deepEqual(
        resources.map((resource) => [resource.uri, resource.name, resource.mimeType]),
        [
          [`note://${second.id}`, "Second", "application/json"],
          [`note://${first.id}`, "First", "application/json"],
        ],
      );
      const { resourceTemplates } = await client.listResourceTemplates();
      assert.deepEqual(
        resourceTemplates.map((template) => template.uriTemplate),
        ["note://{id}"],
      );
      const read = await client.readResource({ uri: `note://${first.id}` });
      const rest = (await (await person.call("GET", `/api/notes/${first.id}`)).json()) as {
        note: unknown;
      };
      assert.deepEqual(read.contents, [
        {
          uri: `note://${first.id}`,
          mimeType: "application/json",
          text: JSON.stringify(rest.note),
        },
      ]);
      for (const uri of [`note://${crypto.randomUUID()}`, "note://not-a-uuid"]) {
        await assert.rejects(client.readResource({ uri }), (error: unknown) => {
          assert.ok(error instanceof McpError);
          assert.equal(error.code, -32002);
          return true;
        });
      }
    });

    it("acts for the token's own person only", async () => {
      const ada = await connect((await boundPerson()).bound);
      const bob = await connect((await boundPerson()).bound);
      const { note } = await succeed<{ note: NoteJson }>(ada, "create_note", {
        title: "Ada's secret",
      });
      assert.equal((await refusal(bob, "get_note", { id: note.id })).code, "note_not_found");
      assert.equal((await succeed<Page>(bob, "list_notes")).total, 0);
      assert.equal((await refusal(bob, "delete_note", { id: note.id })).code, "note_not_found");
      await succeed(ada, "get_note", { id: note.id });
    });

    it("refuses a token not bound to the notes API with 401 and an invalid_token challenge", async () => {
      const person = await notes.person();
      const other = await notes.identity.createPartner({
        name: "Elsewhere",
        ownerEmail: "elsewhere@example.com",
      });
      const refused: [string, string][] = [
        [person.token, "session_token_unbound"],
        [await notes.mint(person.key, other.id), "session_token_invalid"],
        ["aps_forged", "session_token_invalid"],
      ];
      for (const [token, code] of refused) {
        const answer = await post({ authorization: `Bearer ${token}` });
        assert.equal(answer.status, 401, code);
        const why =
          code === "session_token_unbound"
            ? ', error_description="The token is not bound to this resource: ask AgentPass for it with the resource parameter (RFC 8707)"'
            : "";
        assert.equal(
          answer.headers.get("www-authenticate"),
          `${MCP_CHALLENGE}, error="invalid_token"${why}, ${LEGACY}`,
        );
        const body = (await answer.json()) as { code: string; error: string };
        assert.equal(body.code, code);
        if (code === "session_token_unbound") {
          assert.equal(
            body.error,
            `Session token not bound to the notes API: mint it with agentpass token --resource ${PUBLIC_URL}/mcp (or --audience <partner id>)`,
          );
        }
        await assert.rejects(connect(token), (error: unknown) => {
          assert.ok(error instanceof StreamableHTTPError);
          assert.equal(error.code, 401);
          return true;
        });
      }
      const missing = await post({});
      assert.equal(missing.status, 401);
      assert.equal(missing.headers.get("www-authenticate"), `${MCP_CHALLENGE}, ${LEGACY}`);
      // The REST endpoints take the unbound token as before, and the bound one too.
      assert.equal((await person.call("GET", "/api/notes")).status, 200);
      const bound = await notes.mint(person.key, notes.partner.id);
      assert.equal((await notes.call(bound, "GET", "/api/notes")).status, 200);
    });

    it("refuses a token on the very next request once its user key is revoked (no cache)", async () => {
      const person = await boundPerson();
      assert.equal((await post({ authorization: `Bearer ${person.bound}` })).status, 200);
      await notes.identity.revokeUserKey(person.keyId);
      const answer = await post({ authorization: `Bearer ${person.bound}` });
      assert.equal(answer.status, 401);
      assert.equal(((await answer.json()) as { code: string }).code, "session_token_invalid");
    });

    it("refuses a bound token of a person without a notes account: 401 no_account, no invalid_token", async () => {
      const stranger = await notes.person(undefined, false);
      const answer = await post({
        authorization: `Bearer ${await notes.mint(stranger.key, notes.partner.id)}`,
      });
      assert.equal(answer.status, 401);
      // invalid_token would send an OAuth client to refresh or re-authorize, in a loop.
      assert.equal(
        answer.headers.get("www-authenticate"),
        `${MCP_CHALLENGE}, error_description="The token is valid, but no account here has its email: the notes API's admin must add one", ${LEGACY}`,
      );
      assert.deepEqual(await answer.json(), {
        error: "No notes account for this email (the token is valid)",
        code: "no_account",
      });
    });

    it("refuses a request from another origin with 403 before authentication", async () => {
      const token = (await boundPerson()).bound;
      for (const origin of ["http://evil.example", "https://notes.example.evil", "null"]) {
        const answer = await post({ origin, authorization: `Bearer ${token}` });
        assert.equal(answer.status, 403, origin);
        assert.deepEqual(await answer.json(), {
          error: "Origin not allowed",
          code: "origin_not_allowed",
        });
        assert.equal((await post({ origin })).status, 403, "before any token is looked at");
      }
      const own = await post({ origin: PUBLIC_URL, authorization: `Bearer ${token}` });
      assert.equal(own.status, 200);
      assert.equal(own.headers.get("access-control-allow-origin"), null);
    });

    it("answers GET and DELETE with 405 (no sessions), and a body that is not JSON with a parse error", async () => {
      for (const method of ["GET", "DELETE"]) {
        const answer = await fetch(`${server.url}/mcp`, { method });
        assert.equal(answer.status, 405);
        assert.equal(answer.headers.get("allow"), "OPTIONS, POST");
      }
      const token = (await boundPerson()).bound;
      const broken = await post({ authorization: `Bearer ${token}` }, "{not json");
      assert.equal(broken.status, 400);
      assert.deepEqual(await broken.json(), {
        jsonrpc: "2.0",
        error: { code: -32700, message: "Parse error: Invalid JSON" },
        id: null,
      });
      const initialized = await post({ authorization: `Bearer ${token}` });
      assert.equal(initialized.headers.get("mcp-session-id"), null, "stateless");
      const body = (await initialized.json()) as { result: { protocolVersion: string } };
      assert.equal(body.result.protocolVersion, LATEST_PROTOCOL_VERSION);
    });
  });
}

describe("/mcp when AgentPass cannot vouch for a token", () => {
  /** An initialize request to /mcp with `token` as Bearer. */
  function initialize(notes: TestNotes, token: string) {
    return notes.app.request("/mcp", {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify(INITIALIZE),
    });
  }

  async function expectUnavailable(response: Response) {
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.deepEqual(await response.json(), {
      error: "Identity service unavailable",
      code: "identity_unavailable",
    });
  }

  it("answers 503, never 401 and never a pass, once AgentPass refuses the notes API's own key", async () => {
    const notes = await openTestNotes("sqlite");
    try {
      const person = await notes.person();
      const token = await notes.mint(person.key, notes.partner.id);
      assert.equal((await initialize(notes, token)).status, 200);
      await notes.identity.revokePartnerKey(notes.partner.keyId);
      await expectUnavailable(await initialize(notes, token));
    } finally {
      await notes.close();
    }
  });

  it("answers 503 while AgentPass is down: introspection is never served from a cache", async () => {
    const notes = await openTestNotes("sqlite");
    try {
      const person = await notes.person();
      const token = await notes.mint(person.key, notes.partner.id);
      assert.equal((await initialize(notes, token)).status, 200);
      await notes.identity.close();
      await expectUnavailable(await initialize(notes, token));
    } finally {
      await notes.close().catch(() => {});
    }
  });
});
