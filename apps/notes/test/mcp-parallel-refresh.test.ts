import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { TestNotes } from "./support/harness.ts";
import { approveConsent, MemoryProvider, openNotesForMcpClients } from "./support/mcp-oauth.ts";

// Issue 43: the official SDK refreshes once per concurrent 401, so an agent calling tools in
// parallel when its access token expires presents the same refresh token several times at
// once. That is not theft, and must not cost the person their grant.

/** A refresh the token endpoint was asked for, and its answer. */
interface RefreshSeen {
  /** Its place among the refreshes in the order they were sent (answers may come in another). */
  sent: number;
  refreshToken: string;
  status: number;
  error: string | undefined;
  /** The refresh token it answered with. */
  successor: string | undefined;
}

/**
 * `fetch` for the transport, noting every refresh it carries to `tokenUrl`. The token
 * endpoint's answers are handed on as this process's global `Response`: the in-process servers'
 * @hono/node-server replaces `globalThis.Response`, and the SDK reads an OAuth error only from an
 * `instanceof Response` (any other answer is a `server_error` to it), so without this the SDK
 * here would not act on `invalid_grant` as it does in an agent's own process.
 */
function fetchNotingRefreshes(tokenUrl: string, seen: RefreshSeen[]): FetchLike {
  let sent = 0;
  return async (url, init) => {
    if (String(url) !== tokenUrl) return fetch(url, init);
    const body = init?.body;
    const form = body instanceof URLSearchParams ? body : new URLSearchParams(String(body ?? ""));
    const isRefresh = form.get("grant_type") === "refresh_token";
    const place = isRefresh ? ++sent : 0;
    const response = await fetch(url, init);
    const text = await response.text();
    if (isRefresh) {
      const answer = JSON.parse(text) as { error?: string; refresh_token?: string };
      seen.push({
        sent: place,
        refreshToken: form.get("refresh_token") ?? "",
        status: response.status,
        error: answer.error,
        successor: answer.refresh_token,
      });
    }
    const { status, statusText, headers } = response;
    return new Response(text, { status, statusText, headers });
  };
}

for (const engine of testEngines()) {
  describe(`an MCP client whose access token expires while it calls tools in parallel (${engine})`, () => {
    let notes: TestNotes;
    let notesUrl: string;
    let close: () => Promise<void>;

    before(async () => {
      ({ notes, notesUrl, close } = await openNotesForMcpClients(engine));
    });
    after(() => close());

    it("keeps the grant when four tool calls at expiry refresh at once, and past the grace too", async () => {
      const email = `parallel-${crypto.randomUUID()}@example.com`;
      await notes.identity.createAccount(email);
      await notes.store.addUser(email, notes.now());
      const mcpUrl = new URL(`${notesUrl}/mcp`);
      const tokenUrl = `${notes.identity.url}/oauth/token`;
      const provider = new MemoryProvider("Parallel agent");
      const refreshes: RefreshSeen[] = [];
      const transportOptions = {
        authProvider: provider,
        fetch: fetchNotingRefreshes(tokenUrl, refreshes),
      };
      /** What happened, for the message of a failed assertion. */
      const story = (calls: string[] = []) =>
        JSON.stringify(
          {
            refreshes: refreshes.map((seen) => ({
              ...seen,
              refreshToken: `…${seen.refreshToken.slice(-8)}`,
              successor: seen.successor && `…${seen.successor.slice(-8)}`,
            })),
            tokensSaved: provider.saves.length,
            invalidations: provider.invalidations,
            calls,
          },
          null,
          2,
        );

      // Log in once: discovery, registration, consent, code for tokens.
      await new Client({ name: "agent", version: "1.0.0" })
        .connect(new StreamableHTTPClientTransport(mcpUrl, transportOptions))
        .catch(() => {});
      const returned = await approveConsent(notes, provider.authorizationUrl as URL, email);
      const transport = new StreamableHTTPClientTransport(mcpUrl, transportOptions);
      await transport.finishAuth(returned.searchParams.get("code") ?? "");
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(transport);
      try {
        const first = await client.callTool({
          name: "create_note",
          arguments: { title: "Before expiry", content: "one call" },
        });
        assert.notEqual(first.isError, true, JSON.stringify(first));

        // Past the access token's life: each of the four calls meets its own 401 and refreshes.
        notes.advance(301_000);
        const calls = await Promise.allSettled(
          [1, 2, 3, 4].map((n) =>
            client.callTool({
              name: "create_note",
              arguments: { title: `Parallel ${n}`, content: "at expiry" },
            }),
          ),
        );
        const outcomes = calls.map((call) =>
          call.status === "rejected"
            ? String(call.reason)
            : call.value.isError
              ? "tool error"
              : "ok",
        );
        for (const call of calls) {
          assert.equal(call.status, "fulfilled", story(outcomes));
          assert.notEqual(call.value.isError, true, story(outcomes));
        }
        // The race happened: a refresh token was presented more than once. Each presentation was
        // answered, a token presented again with the same successor, and none cost the tokens.
        const presented = refreshes.map((seen) => seen.refreshToken);
        assert.ok(new Set(presented).size < presented.length, story(outcomes));
        for (const token of new Set(presented)) {
          const answers = refreshes.filter((seen) => seen.refreshToken === token);
          assert.deepEqual(
            answers.map((seen) => seen.status),
            answers.map(() => 200),
            story(outcomes),
          );
          assert.equal(new Set(answers.map((seen) => seen.successor)).size, 1, story(outcomes));
        }
        assert.deepEqual(provider.invalidations, [], story(outcomes));

        // The grant stands: what the agent kept calls tools now, and refreshes in five minutes,
        // long past a replaced token's grace, whichever answer the agent happened to save last.
        const search = (words: string) =>
          client
            .callTool({ name: "search_notes", arguments: { search: words } })
            .catch((error: unknown) => assert.fail(`${error}\n${story()}`));
        const now = await search("expiry");
        assert.notEqual(now.isError, true, JSON.stringify(now));
        notes.advance(301_000);
        const later = await search("Parallel");
        assert.notEqual(later.isError, true, JSON.stringify(later));
        const kept = provider.saved?.refresh_token;
        assert.ok(kept, story());
        const direct = await fetch(tokenUrl, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "refresh_token",
            refresh_token: kept,
            client_id: provider.client?.client_id ?? "",
            resource: mcpUrl.href,
          }),
        });
        const refreshed = (await direct.json()) as { access_token?: string };
        assert.equal(direct.status, 200, JSON.stringify(refreshed));
        assert.match(refreshed.access_token ?? "", /^aps_/);
      } finally {
        await client.close();
      }
    });
  });
}
