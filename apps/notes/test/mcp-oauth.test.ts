import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";
import type { TestNotes } from "./support/harness.ts";
import { MemoryProvider, openNotesForMcpClients } from "./support/mcp-oauth.ts";

for (const engine of testEngines()) {
  describe(`an MCP client with OAuth, from the notes /mcp URL alone (${engine})`, () => {
    let notes: TestNotes;
    let notesUrl: string;
    let close: () => Promise<void>;

    before(async () => {
      ({ notes, notesUrl, close } = await openNotesForMcpClients(engine));
    });
    after(() => close());

    /** The person approves in Chromium; answers the code the client's callback received. */
    async function consentInChromium(authorizationUrl: URL, email: string): Promise<URL> {
      const browser = await chromium.launch({
        executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
        headless: true,
        args: ["--no-sandbox"],
      });
      try {
        const context = await browser.newContext();
        await context.addCookies([
          {
            name: "agentpass_session",
            value: await notes.identity.webSession(email),
            url: notes.identity.url,
          },
        ]);
        const callback = Promise.withResolvers<URL>();
        await context.route("http://127.0.0.1:9/**", async (route) => {
          callback.resolve(new URL(route.request().url()));
          await route.fulfill({ status: 200, body: "You can close this window." });
        });
        const page = await context.newPage();
        await page.goto(authorizationUrl.href);
        const shown = (await page.textContent("body")) ?? "";
        assert.match(shown, /MCP test agent/);
        assert.match(shown, /unverified/);
        assert.match(shown, /Notes/);
        await page.getByRole("button", { name: "Allow" }).click();
        return await callback.promise;
      } finally {
        await browser.close();
      }
    }

    it("discovers, registers, gets consent, uses the tools, and refreshes past the token's expiry", async () => {
      const email = `mcp-${crypto.randomUUID()}@example.com`;
      await notes.identity.createAccount(email);
      await notes.store.addUser(email, notes.now());
      const provider = new MemoryProvider("MCP test agent");
      const mcpUrl = new URL(`${notesUrl}/mcp`);

      // First contact: 401 with resource metadata; the SDK discovers both documents, registers
      // (RFC 7591) and sends the person to the authorization endpoint.
      const first = new Client({ name: "agent", version: "1.0.0" });
      await assert.rejects(
        first.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })),
        UnauthorizedError,
      );
      assert.ok(provider.client?.client_id, "the client registered");
      const authorizationUrl = provider.authorizationUrl as URL;
      assert.equal(authorizationUrl.origin, notes.identity.url);
      assert.equal(authorizationUrl.searchParams.get("resource"), `${notesUrl}/mcp`);
      assert.equal(authorizationUrl.searchParams.get("code_challenge_method"), "S256");

      const returned = await consentInChromium(authorizationUrl, email);
      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await transport.finishAuth(returned.searchParams.get("code") ?? "");
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(transport);
      try {
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        assert.ok(tools.includes("create_note") && tools.includes("search_notes"));
        const created = await client.callTool({
          name: "create_note",
          arguments: { title: "From an agent", content: "hello over MCP" },
        });
        assert.notEqual(created.isError, true, JSON.stringify(created));
        const id = (created.structuredContent as { note: { id: string } }).note.id;
        const found = await client.callTool({
          name: "search_notes",
          arguments: { search: "agent" },
        });
        assert.ok(JSON.stringify(found.structuredContent).includes(id));

        // Past the session token's life: the SDK refreshes (the refresh token rotates).
        const before = provider.saved?.access_token;
        notes.advance(301_000);
        const deleted = await client.callTool({ name: "delete_note", arguments: { id } });
        assert.notEqual(deleted.isError, true, JSON.stringify(deleted));
        assert.notEqual(provider.saved?.access_token, before, "a fresh access token");
        const gone = await client.callTool({ name: "get_note", arguments: { id } });
        assert.equal(gone.isError, true);
      } finally {
        await client.close();
      }
    });

    it("refuses a token bound to another partner with the 401 challenge", async () => {
      const other = await notes.identity.createPartner({
        name: "Elsewhere",
        ownerEmail: "elsewhere@example.com",
      });
      const person = await notes.person();
      const elsewhere = await notes.mint(person.key, other.id);
      const response = await fetch(`${notesUrl}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${elsewhere}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      assert.equal(response.status, 401);
      assert.match(
        response.headers.get("www-authenticate") ?? "",
        new RegExp(
          `^Bearer resource_metadata="${notesUrl}/.well-known/oauth-protected-resource/mcp", error="invalid_token"`,
        ),
      );
    });
  });
}
