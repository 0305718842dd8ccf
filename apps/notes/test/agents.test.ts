import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { freePort, testEngines } from "@agentpass/db/testing";
import {
  agentJwt,
  call,
  type Ed25519Key,
  ed25519Key,
  hostJwt,
} from "../../identity/test/support/agent-auth-client.ts";
import { openTestNotes, type TestNotes } from "./support/harness.ts";

/**
 * Two agents of one person against the notes API (issue 54): each acts with its own one-time
 * agent JWTs (Agent Auth Protocol, `aud` the notes API), on REST and on `/mcp`; AgentPass tells
 * the person which agent each partner saw; revoking one leaves the other working; a 401 names
 * AgentPass's Agent Auth discovery beside the Bearer challenge.
 */

const PUBLIC_URL = "https://notes.example";

for (const engine of testEngines()) {
  describe(`notes API: agents with their own keys (${engine})`, () => {
    let notes: TestNotes;
    let issuer: string;

    before(async () => {
      issuer = `http://127.0.0.1:${await freePort()}`;
      notes = await openTestNotes(engine, { PUBLIC_URL: issuer }, { PUBLIC_URL });
      // JWTs carry the wall clock's time: the services' clock starts where it is.
      notes.advance(Date.now() - notes.now());
      await notes.identity.addPartnerResource(notes.partner.id, `${PUBLIC_URL}/mcp`);
    });
    after(() => notes.close());

    /** An agent of `email` registered under `host` (asking for `capabilities`) and approved. */
    async function agentOf(
      email: string,
      host: Ed25519Key,
      name: string,
      capabilities?: unknown[],
    ) {
      const key = await ed25519Key();
      const registered = await call(`${issuer}/agent/register`, {
        bearer: await hostJwt(host, issuer, { agent_public_key: key.jwk }),
        body: { name, host_name: "laptop", ...(capabilities && { capabilities }) },
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const code = (registered.body.approval as { user_code: string }).user_code;
      assert.equal(await notes.identity.decideAgent(code, email), "decided");
      const id = registered.body.agent_id as string;
      return {
        id,
        jwt: (aud = PUBLIC_URL) => agentJwt(key, host.thumbprint, id, aud),
      };
    }

    function rest(
      jwt: string,
      method: string,
      path: string,
      body?: unknown,
      at: { request: TestNotes["app"]["request"] } = notes.app,
    ) {
      return at.request(path, {
        method,
        headers: { authorization: `Bearer ${jwt}`, "content-type": "application/json" },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    }

    it("serves two agents of one person, each attributed, and keeps the other when one is revoked", async () => {
      const person = await notes.person();
      const host = await ed25519Key();
      const writer = await agentOf(person.email, host, "writer");
      const reader = await agentOf(person.email, host, "reader");

      const created = await rest(await writer.jwt(), "POST", "/api/notes", {
        title: "by the writer",
        body: "hello",
      });
      assert.equal(created.status, 201, await created.clone().text());
      const { note: written } = (await created.json()) as { note: { agent?: unknown } };
      assert.deepEqual(written.agent, { id: writer.id, name: "writer" });
      const jwt = await reader.jwt();
      const listed = await rest(jwt, "GET", "/api/notes");
      assert.equal(listed.status, 200);
      const { notes: items } = (await listed.json()) as {
        notes: Array<{ title: string; agent?: { name: string } }>;
      };
      assert.deepEqual(
        items.map((note) => [note.title, note.agent?.name]),
        [["by the writer", "writer"]],
      );
      const replayed = await rest(jwt, "GET", "/api/notes");
      assert.equal(replayed.status, 401, "an agent JWT is good once");
      // Good once across the notes API's instances too: AgentPass spends it for all of them.
      const twin = await notes.another();
      const fresh = await reader.jwt();
      assert.equal((await rest(fresh, "GET", "/api/notes")).status, 200);
      assert.equal((await rest(fresh, "GET", "/api/notes", undefined, twin)).status, 401);

      // The person's AgentPass knows which agent the notes API saw.
      const ctx = notes.identity.service.ctx;
      await ctx.usage.flush();
      const account = await notes.identity.createAccount(person.email);
      const [listedHost] = await ctx.agents.listHostsOfAccount(account.id);
      const seen = new Map(
        listedHost?.agents.map((agent) => [agent.name, agent.partners.map((p) => p.partnerName)]),
      );
      assert.deepEqual(seen.get("writer"), ["Notes"]);
      assert.deepEqual(seen.get("reader"), ["Notes"]);

      const revoked = await call(`${issuer}/agent/revoke`, {
        bearer: await hostJwt(host, issuer),
        body: { agent_id: writer.id },
      });
      assert.equal(revoked.status, 200);
      assert.equal((await rest(await writer.jwt(), "GET", "/api/notes")).status, 401);
      assert.equal(
        (await rest(await writer.jwt(), "GET", "/api/notes", undefined, twin)).status,
        401,
      );
      assert.equal((await rest(await reader.jwt(), "GET", "/api/notes")).status, 200);
      assert.equal(
        (await rest(await reader.jwt(), "GET", "/api/notes", undefined, twin)).status,
        200,
      );
    });

    it("takes an agent's JWT at /mcp, whose aud binds it to the notes API", async () => {
      const person = await notes.person();
      const agent = await agentOf(person.email, await ed25519Key(), "mcp agent");
      const initialize = await notes.app.request("/mcp", {
        method: "POST",
        headers: {
          authorization: `Bearer ${await agent.jwt()}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "test", version: "1" },
          },
        }),
      });
      assert.equal(initialize.status, 200, await initialize.clone().text());
    });

    it("executes its capabilities for an agent, within what its person granted", async () => {
      const declared = await notes.service.declareCapabilities();
      assert.ok(declared?.ok, JSON.stringify(declared));
      const listed = await call(`${issuer}/capability/list`);
      assert.deepEqual(
        (listed.body.capabilities as { name: string }[]).map((c) => c.name),
        ["create_note", "list_notes"],
      );
      const person = await notes.person();
      const agent = await agentOf(person.email, await ed25519Key(), "clerk", [
        { name: "list_notes", constraints: { limit: { max: 2 } } },
        "create_note",
      ]);
      const location = `${PUBLIC_URL}/agent/execute`;
      const execute = async (capability: string, args: unknown, jwt?: string) => {
        const response = await rest(jwt ?? (await agent.jwt(location)), "POST", "/agent/execute", {
          capability,
          arguments: args,
        });
        return { status: response.status, headers: response.headers, body: await response.json() };
      };

      const created = await execute("create_note", { title: "from the clerk", text: "hello" });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.data.note.title, "from the clerk");
      assert.deepEqual(created.body.data.note.agent, { id: agent.id, name: "clerk" });
      // The person sees who wrote it through their own token, too.
      const mine = await notes.call(person.token, "GET", "/api/notes");
      const page = (await mine.json()) as { notes: { agent?: { name: string } }[] };
      assert.equal(page.notes[0]?.agent?.name, "clerk");

      const within = await execute("list_notes", { limit: 2, search: "clerk" });
      assert.equal(within.status, 200, JSON.stringify(within.body));
      assert.equal(within.body.data.total, 1);
      const beyond = await execute("list_notes", { limit: 50 });
      assert.equal(beyond.status, 403);
      assert.equal(beyond.body.error, "constraint_violated");
      assert.deepEqual(beyond.body.violations, [
        { field: "limit", constraint: { max: 2 }, actual: 50 },
      ]);
      const badArgs = await execute("create_note", { title: 7 });
      assert.equal(badArgs.status, 400);
      assert.equal(badArgs.body.error, "invalid_request");
      const unknown = await execute("delete_everything", {});
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error, "capability_not_found");
      // A JWT for the API itself is not one for the location.
      const elsewhere = await execute("list_notes", { limit: 1 }, await agent.jwt());
      assert.equal(elsewhere.status, 401);
      assert.equal(elsewhere.body.error, "invalid_jwt");
      assert.match(elsewhere.headers.get("www-authenticate") ?? "", /^AgentAuth discovery="/);
      // A person AgentPass vouches for, without a notes account: the agent is refused here.
      const stranger = await notes.person(undefined, false);
      const outsider = await agentOf(stranger.email, await ed25519Key(), "outsider", [
        "list_notes",
      ]);
      const noAccount = await execute("list_notes", {}, await outsider.jwt(location));
      assert.equal(noAccount.status, 403);
      assert.equal(noAccount.body.error, "no_account");
      const anonymous = await notes.app.request("/agent/execute", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ capability: "list_notes" }),
      });
      assert.equal(anonymous.status, 401);
    });

    it("names AgentPass's Agent Auth discovery in every 401, beside Bearer", async () => {
      const missing = await notes.call(null, "GET", "/api/notes");
      assert.equal(missing.status, 401);
      const challenge = missing.headers.get("www-authenticate") ?? "";
      assert.match(challenge, /^Bearer resource_metadata="/);
      assert.ok(
        challenge.endsWith(`, AgentAuth discovery="${issuer}/.well-known/agent-configuration"`),
        challenge,
      );
      const discovery = await call(`${issuer}/.well-known/agent-configuration`);
      assert.equal(discovery.body.issuer, issuer);
    });
  });
}
