import assert from "node:assert/strict";
import { after, before, describe, it, type TestContext } from "node:test";
import { testEngines } from "@agentpass/db/testing";
import {
  Client,
  DpopSession,
  type FetchLike,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import type { TestNotes } from "./support/harness.ts";
import { approveConsent, MemoryProvider, openNotesForMcpClients } from "./support/mcp-oauth.ts";

/**
 * `/mcp` with the MCP TypeScript client 2.x and its DPoP (RFC 9449): from the URL alone it
 * discovers AgentPass, gets tokens bound to a key of its own, and calls tools with a proof on
 * every request, which the notes API has AgentPass check through introspection.
 */

/**
 * The client's OAuth state in memory (`MemoryProvider`), with one DPoP session (its key and the
 * servers' nonces) for the life of the registration, as the SDK asks, and the discovery state
 * kept with the code verifier, so that the code is redeemed where it was asked for (SEP-2352).
 */
class DpopProvider extends MemoryProvider implements OAuthClientProvider {
  readonly session = DpopSession.create();
  discovery: OAuthDiscoveryState | undefined;

  dpop() {
    return this.session;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

/** A request the client sent: where, how its token went, and the answer. */
interface Sent {
  url: string;
  /** The scheme of its Authorization header (`DPoP`, `Bearer`), if any. */
  scheme: string | undefined;
  proof: boolean;
  status: number;
  /** For a refresh: the refresh token presented, the `error` of a refusal, the successor. */
  refreshToken?: string;
  error?: string;
  successor?: string;
}

/**
 * `fetch` for the transport, below the SDK's own DPoP layer: it notes what each request carried.
 * Answers are handed on as this process's global `Response`, as `mcp-parallel-refresh.test.ts`
 * explains, so the SDK reads the token endpoint's errors as in an agent's own process.
 */
function fetchNoting(sent: Sent[]): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    const body = init?.body;
    const form = body instanceof URLSearchParams ? body : new URLSearchParams(String(body ?? ""));
    const response = await fetch(url, init);
    const text = await response.text();
    const seen: Sent = {
      url: String(url),
      scheme: headers.get("authorization")?.split(" ")[0],
      proof: headers.has("dpop"),
      status: response.status,
    };
    if (form.get("grant_type") === "refresh_token") {
      const answer = JSON.parse(text) as { error?: string; refresh_token?: string };
      seen.refreshToken = form.get("refresh_token") ?? "";
      seen.error = answer.error;
      seen.successor = answer.refresh_token;
    }
    sent.push(seen);
    const { status, statusText } = response;
    return new Response(text === "" ? null : text, {
      status,
      statusText,
      headers: response.headers,
    });
  };
}

for (const engine of testEngines()) {
  describe(`an MCP client 2.x with DPoP, from the notes /mcp URL alone (${engine})`, () => {
    let notes: TestNotes;
    let notesUrl: string;
    let close: () => Promise<void>;

    before(async () => {
      ({ notes, notesUrl, close } = await openNotesForMcpClients(engine));
    });
    after(() => close());

    /**
     * A person with a notes account whose agent logged in with DPoP: discovery, registration,
     * consent, the code for tokens bound to its key. The SDK stamps its proofs with the wall
     * clock and the services run on the test's: for this test, the wall clock is the test's.
     */
    async function loggedInAgent(t: TestContext) {
      t.mock.method(Date, "now", () => notes.now());
      const email = `dpop-${crypto.randomUUID()}@example.com`;
      await notes.identity.createAccount(email);
      await notes.store.addUser(email, notes.now());
      const mcpUrl = new URL(`${notesUrl}/mcp`);
      const provider = new DpopProvider("DPoP agent");
      const sent: Sent[] = [];
      const options = { authProvider: provider, fetch: fetchNoting(sent) };
      await new Client({ name: "agent", version: "1.0.0" })
        .connect(new StreamableHTTPClientTransport(mcpUrl, options))
        .catch(() => {});
      assert.ok(provider.authorizationUrl, JSON.stringify(sent));
      const returned = await approveConsent(notes, provider.authorizationUrl, email);
      const transport = new StreamableHTTPClientTransport(mcpUrl, options);
      await transport.finishAuth(returned.searchParams);
      assert.equal(provider.saved?.token_type, "DPoP", JSON.stringify(provider.saved));
      const client = new Client({ name: "agent", version: "1.0.0" });
      await client.connect(transport);
      t.after(() => client.close());
      return { client, provider, sent, mcpUrl };
    }

    it("calls tools with a proof each time, and keeps the grant when four calls at expiry refresh at once", async (t) => {
      const { client, provider, sent, mcpUrl } = await loggedInAgent(t);
      const story = () => JSON.stringify({ sent, invalidations: provider.invalidations }, null, 2);
      const first = await client.callTool({
        name: "create_note",
        arguments: { title: "Before expiry", content: "one call" },
      });
      assert.notEqual(first.isError, true, JSON.stringify(first));

      // Past the access token's life: each of the four calls may meet its own 401 and refresh.
      notes.advance(301_000);
      const calls = await Promise.allSettled(
        [1, 2, 3, 4].map((n) =>
          client.callTool({
            name: "create_note",
            arguments: { title: `Parallel ${n}`, content: "at expiry" },
          }),
        ),
      );
      for (const call of calls) {
        assert.equal(
          call.status,
          "fulfilled",
          `${call.status === "rejected" && call.reason}\n${story()}`,
        );
        assert.notEqual(call.value.isError, true, story());
      }
      // Each refresh was answered with tokens, or (its nonce stale) retried with AgentPass's new one.
      // The race happened (one refresh token presented more than once), and every presentation
      // got the same successor: none cost the agent its grant.
      const refreshes = sent.filter((seen) => seen.refreshToken !== undefined);
      const nonceDemands = refreshes.filter((seen) => seen.error === "use_dpop_nonce");
      const answered = refreshes.filter((seen) => seen.status === 200);
      assert.equal(nonceDemands.length + answered.length, refreshes.length, story());
      const presented = answered.map((seen) => seen.refreshToken);
      assert.ok(new Set(presented).size < presented.length, story());
      for (const token of new Set(presented)) {
        const successors = answered.filter((seen) => seen.refreshToken === token);
        assert.equal(new Set(successors.map((seen) => seen.successor)).size, 1, story());
      }
      assert.deepEqual(provider.invalidations, [], story());
      assert.equal(provider.saved?.token_type, "DPoP", story());

      // The grant stands: the agent calls tools now, and refreshes again five minutes later.
      const found = await client.callTool({
        name: "search_notes",
        arguments: { search: "expiry" },
      });
      assert.notEqual(found.isError, true, JSON.stringify(found));
      notes.advance(301_000);
      const later = await client.callTool({
        name: "search_notes",
        arguments: { search: "Parallel" },
      });
      assert.notEqual(later.isError, true, JSON.stringify(later));
      assert.equal((later.structuredContent as { total: number }).total, 4);

      // Every call of /mcp carried the token under the DPoP scheme, with a proof.
      const toMcp = sent.filter((seen) => seen.url === mcpUrl.href && seen.scheme !== undefined);
      assert.ok(toMcp.length >= 7, story());
      for (const seen of toMcp) {
        assert.equal(seen.scheme, "DPoP", story());
        assert.equal(seen.proof, true, story());
      }
    });

    it("refuses its token as Bearer, and with a proof of another URL, by another key, or used before", async (t) => {
      const { provider, mcpUrl } = await loggedInAgent(t);
      const token = provider.saved?.access_token ?? "";
      const session = await provider.session;
      const stranger = await DpopSession.create();
      const call = (headers: Record<string, string>) =>
        fetch(mcpUrl, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...headers,
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        });
      const metadata = `${notesUrl}/.well-known/oauth-protected-resource/mcp`;
      const challenge = (error: string, description: string) =>
        `Bearer resource_metadata="${metadata}", DPoP error="${error}", error_description="${description}", algs="ES256 EdDSA", AgentPass-Session header="x-session-token", AgentAuth discovery="${notes.identity.url}/.well-known/agent-configuration"`;
      const bound = "This session token is bound to a key: send its DPoP proof";
      const proof = (signer: DpopSession, htu: string) =>
        signer.buildProof({ htm: "POST", htu, accessToken: token });
      const cases: [string, Record<string, string>, string, string, string][] = [
        [
          "as Bearer",
          { authorization: `Bearer ${token}` },
          "session_token_proof_required",
          "invalid_token",
          bound,
        ],
        [
          "without a proof",
          { authorization: `DPoP ${token}` },
          "session_token_proof_required",
          "invalid_token",
          bound,
        ],
        [
          "with a proof of another URL",
          { authorization: `DPoP ${token}`, dpop: await proof(session, `${notesUrl}/api/notes`) },
          "session_token_proof_invalid",
          "invalid_dpop_proof",
          "Invalid DPoP proof: The DPoP proof's htu is not this URL",
        ],
        [
          "with a proof by another key",
          { authorization: `DPoP ${token}`, dpop: await proof(stranger, mcpUrl.href) },
          "session_token_proof_invalid",
          "invalid_dpop_proof",
          "Invalid DPoP proof: The DPoP proof is signed by another key than the token's",
        ],
      ];
      for (const [what, headers, code, error, message] of cases) {
        const answer = await call(headers);
        assert.equal(answer.status, 401, what);
        assert.deepEqual(await answer.json(), { error: message, code }, what);
        assert.equal(answer.headers.get("www-authenticate"), challenge(error, message), what);
      }
      // With a proof of its own for this request, by its key, the same token is served, once.
      const headers = { authorization: `DPoP ${token}`, dpop: await proof(session, mcpUrl.href) };
      const served = await call(headers);
      assert.equal(served.status, 200, await served.text());
      const replayed = await call(headers);
      const used = "Invalid DPoP proof: The DPoP proof was used already (its jti)";
      assert.equal(replayed.status, 401);
      assert.deepEqual(await replayed.json(), { error: used, code: "session_token_proof_invalid" });
      assert.equal(replayed.headers.get("www-authenticate"), challenge("invalid_dpop_proof", used));
    });
  });
}
