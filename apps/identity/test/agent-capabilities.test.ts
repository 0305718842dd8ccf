import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { createTestDatabase, freePort, testEngines } from "@agentpass/db/testing";
import { createAccount } from "../src/domain/accounts.ts";
import { issueKey, revokeKey } from "../src/domain/credentials.ts";
import { addPartnerResource } from "../src/domain/oauth-resources.ts";
import { createPartner } from "../src/domain/partners.ts";
import { startWebSession } from "../src/domain/web-sessions.ts";
import {
  agentJwt,
  call,
  type Ed25519Key,
  ed25519Key,
  hostJwt,
} from "./support/agent-auth-client.ts";
import { startInstance } from "./support/instances.ts";
import { webClient } from "./support/web-client.ts";

/**
 * Capabilities (issue 54; Agent Auth Protocol sections 2.12–2.15, 5.2, 5.4, 5.11): a partner
 * declares what agents may do at its own location, with JSON Schema inputs; an agent asks for
 * grants, narrowed by constraints; its person approves some at /device; the partner's location
 * asks AgentPass before it executes, and gets section 5.11's refusals. Two instances, one
 * database, real HTTP, `jose` as the outside client.
 */

const RESOURCE = "https://notes.example";
const LOCATION = `${RESOURCE}/agent/execute`;
const LIST_NOTES = {
  name: "list_notes",
  description: "Read your notes <b>with a tag</b>",
  location: LOCATION,
  input: {
    type: "object",
    properties: {
      tag: { type: "string", maxLength: 50 },
      limit: { type: "integer", minimum: 1, maximum: 100 },
    },
    additionalProperties: false,
  },
  output: { type: "object", properties: { notes: { type: "array" } } },
};
const CREATE_NOTE = {
  name: "create_note",
  description: "Write a note",
  location: LOCATION,
  input: {
    type: "object",
    required: ["title"],
    properties: { title: { type: "string" }, body: { type: "string" } },
  },
};

for (const engine of testEngines()) {
  describe(`capabilities (${engine})`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let a: Awaited<ReturnType<typeof startInstance>>;
    let b: Awaited<ReturnType<typeof startInstance>>;
    let issuer: string;
    let person: { id: string; email: string };
    let partner: { id: string; key: string };
    let other: { id: string; key: string };

    async function makePartner(name: string, resource: string) {
      const { ctx } = a.service;
      const owner = await createAccount(ctx, `owner-${randomUUID()}@example.com`);
      if (!owner.ok) throw new Error(owner.code);
      const made = await createPartner(ctx, { ownerAccountId: owner.account.id, name });
      if (!made.ok) throw new Error(made.reason);
      const key = await issueKey(ctx, "partner", made.partner.id, "server");
      if (!key.ok) throw new Error(key.code);
      assert.deepEqual(await addPartnerResource(ctx, made.partner.id, resource), { ok: true });
      return { id: made.partner.id, key: key.key };
    }

    before(async () => {
      database = await createTestDatabase(engine);
      const port = await freePort();
      issuer = `http://127.0.0.1:${port}`;
      a = await startInstance(database, issuer, port);
      b = await startInstance(database, issuer, await freePort());
      partner = await makePartner("Notes", `${RESOURCE}/api`);
      other = await makePartner("Calendar", "https://calendar.example/api");
      const created = await createAccount(a.service.ctx, `person-${randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      person = created.account;
    });
    after(async () => {
      await b.server.close();
      await a.server.close();
      await database.drop();
    });

    const declare = (capabilities: unknown[], key = partner.key, at = a.url) =>
      call(`${at}/partner/capabilities`, { method: "PUT", bearer: key, body: { capabilities } });

    /** The person's browser at /device: the page the code shows, then their decision. */
    async function decide(userCode: string, decision: "approve" | "deny", chosen?: string[]) {
      const browser = webClient({ request: (url, init) => fetch(url, init) }, issuer);
      browser.jar.set("agentpass_session", await startWebSession(a.service.ctx, person.id));
      await browser.get("/device");
      const shown = await (await browser.submit("/device", { code: userCode })).text();
      const fields = { code: userCode, decision, ...(chosen && { capability: chosen }) };
      const decided = await browser.post("/device", fields);
      return { shown, decided: decided.status };
    }

    /** An agent registered asking for `capabilities`, approved with those `chosen`. */
    async function agentWith(capabilities: unknown[], chosen: string[]) {
      const host = await ed25519Key();
      const key = await ed25519Key();
      const registered = await call(`${a.url}/agent/register`, {
        bearer: await hostJwt(host, issuer, { agent_public_key: key.jwk }),
        body: { name: "notes agent", capabilities, reason: "to keep my notes" },
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const approval = registered.body.approval as { user_code: string };
      const seen = await decide(approval.user_code, "approve", chosen);
      assert.equal(seen.decided, 303);
      return { host, key, id: registered.body.agent_id as string, shown: seen.shown };
    }

    const jwtFor = (
      agent: { host: Ed25519Key; key: Ed25519Key; id: string },
      aud = LOCATION,
      extra = {},
    ) => agentJwt(agent.key, agent.host.thumbprint, agent.id, aud, extra);

    function authorize(
      token: string,
      capability: string,
      args?: unknown,
      key = partner.key,
      at = a.url,
    ) {
      return call(`${at}/capability/authorize`, {
        bearer: key,
        body: { token, capability, ...(args !== undefined && { arguments: args }) },
      });
    }

    it("lets a partner declare capabilities at its own locations, with usable schemas", async () => {
      const refusedAs = async (capability: unknown, message: RegExp) => {
        const answer = await declare([capability]);
        assert.equal(answer.status, 400, JSON.stringify(answer.body));
        assert.equal(answer.body.error, "invalid_capabilities");
        assert.match(String(answer.body.message), message);
      };
      await refusedAs({ ...LIST_NOTES, location: "https://elsewhere.example/x" }, /location/);
      await refusedAs({ ...LIST_NOTES, name: "List Notes" }, /a-z0-9_/);
      await refusedAs(
        {
          ...LIST_NOTES,
          input: { type: "object", properties: { tag: { type: "string", pattern: "^(a+)+$" } } },
        },
        /pattern/,
      );
      await refusedAs({ ...LIST_NOTES, input: { type: "nonsense" } }, /JSON Schema/);
      await refusedAs({ ...LIST_NOTES, input: { type: "string" } }, /object/);
      const malformed = await declare([{ name: "x" }]);
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.error, "invalid_request");
      const unknownKey = await declare([LIST_NOTES], "apk_unknown");
      assert.equal(unknownKey.status, 401);
      assert.equal(unknownKey.body.error, "partner_key_invalid");

      const declared = await declare([LIST_NOTES, CREATE_NOTE]);
      assert.equal(declared.status, 200, JSON.stringify(declared.body));
      assert.deepEqual(
        (declared.body.capabilities as { name: string }[]).map((c) => c.name).sort(),
        ["create_note", "list_notes"],
      );
      // One partner's name is not another's to take.
      const taken = await declare(
        [{ ...LIST_NOTES, location: "https://calendar.example/agent/execute" }],
        other.key,
      );
      assert.equal(taken.status, 400);
      assert.match(String(taken.body.message), /Another partner offers list_notes/);

      const own = await call(`${b.url}/partner/capabilities`, { bearer: partner.key });
      assert.equal(own.status, 200);
      assert.equal((own.body.capabilities as unknown[]).length, 2);
      const listed = await call(`${b.url}/capability/list?query=notes`);
      assert.deepEqual(listed.body, {
        capabilities: [{ name: "list_notes", description: LIST_NOTES.description }],
        next_cursor: null,
        has_more: false,
      });
      const described = await call(`${b.url}/capability/describe?name=list_notes`);
      assert.equal(described.status, 200);
      assert.deepEqual(described.body.input, LIST_NOTES.input);
      assert.equal(described.body.location, LOCATION);
      assert.equal(described.body.partner, "Notes");
      const missing = await call(`${b.url}/capability/describe?name=nothing`);
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error, "capability_not_found");
    });

    it("refuses requests for unknown capabilities, operators and arguments", async () => {
      await declare([LIST_NOTES, CREATE_NOTE]);
      const host = await ed25519Key();
      const asking = async (capabilities: unknown[]) =>
        call(`${a.url}/agent/register`, {
          bearer: await hostJwt(host, issuer, { agent_public_key: (await ed25519Key()).jwk }),
          body: { name: "asks", capabilities },
        });
      const unknown = await asking(["list_notes", "launch_rockets"]);
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error, "invalid_capabilities");
      assert.deepEqual(unknown.body.invalid_capabilities, ["launch_rockets"]);
      const operator = await asking([{ name: "list_notes", constraints: { limit: { below: 5 } } }]);
      assert.equal(operator.status, 400);
      assert.equal(operator.body.error, "unknown_constraint_operator");
      assert.deepEqual(operator.body.unknown_operators, ["below"]);
      const field = await asking([{ name: "list_notes", constraints: { owner: "me" } }]);
      assert.equal(field.status, 400);
      assert.equal(field.body.error, "invalid_request");
      const operand = await asking([{ name: "list_notes", constraints: { limit: { max: "5" } } }]);
      assert.equal(operand.status, 400);
    });

    it("grants what the person approves, and lets the location check each execution", async () => {
      await declare([LIST_NOTES, CREATE_NOTE]);
      const agent = await agentWith(
        [
          { name: "list_notes", constraints: { limit: { max: 5 }, tag: { in: ["work"] } } },
          "create_note",
        ],
        ["list_notes"],
      );
      // The person saw what it asked for, in words, as data.
      assert.match(agent.shown, /Read your notes &lt;b&gt;with a tag&lt;\/b&gt;/);
      assert.match(
        agent.shown,
        /only with limit at most 5; tag one of (&quot;|&#34;)work(&quot;|&#34;)/,
      );
      assert.match(agent.shown, /name="capability" value="create_note"/);

      const status = await call(`${b.url}/agent/status?agent_id=${agent.id}`, {
        bearer: await hostJwt(agent.host, issuer),
      });
      assert.equal(status.body.status, "active");
      const grants = status.body.agent_capability_grants as Record<string, unknown>[];
      assert.deepEqual(grants.map((g) => [g.capability, g.status]).sort(), [
        ["create_note", "denied"],
        ["list_notes", "active"],
      ]);
      const active = grants.find((g) => g.capability === "list_notes");
      assert.deepEqual(active?.constraints, { limit: { max: 5 }, tag: { in: ["work"] } });
      assert.equal(active?.location, LOCATION);
      assert.deepEqual(active?.input, LIST_NOTES.input);

      const allowed = await authorize(await jwtFor(agent), "list_notes", { tag: "work", limit: 3 });
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      assert.equal(allowed.body.email, person.email);
      assert.equal(allowed.body.agent_id, agent.id);
      assert.equal(allowed.body.agent_name, "notes agent");
      assert.deepEqual(allowed.body.constraints, { limit: { max: 5 }, tag: { in: ["work"] } });

      const over = await authorize(
        await jwtFor(agent),
        "list_notes",
        { tag: "home", limit: 10 },
        partner.key,
        b.url,
      );
      assert.equal(over.status, 403);
      assert.equal(over.body.error, "constraint_violated");
      assert.deepEqual(over.body.violations, [
        { field: "limit", constraint: { max: 5 }, actual: 10 },
        { field: "tag", constraint: { in: ["work"] }, actual: "home" },
      ]);
      const missingLimit = await authorize(await jwtFor(agent), "list_notes", { tag: "work" });
      assert.equal(missingLimit.body.error, "constraint_violated");
      const badType = await authorize(await jwtFor(agent), "list_notes", {
        tag: "work",
        limit: "3",
      });
      assert.equal(badType.status, 400);
      assert.equal(badType.body.error, "invalid_request");
      assert.match(String(badType.body.message), /limit/);
      const denied = await authorize(await jwtFor(agent), "create_note", { title: "t" });
      assert.equal(denied.status, 403);
      assert.equal(denied.body.error, "capability_not_granted");
      const limited = await authorize(
        await jwtFor(agent, LOCATION, { capabilities: ["create_note"] }),
        "list_notes",
        { tag: "work", limit: 1 },
      );
      assert.equal(limited.body.error, "capability_not_granted");

      // The JWT is for the location exactly, and is used once, on every instance.
      const forIssuer = await authorize(await jwtFor(agent, issuer), "list_notes", {
        tag: "work",
        limit: 1,
      });
      assert.equal(forIssuer.status, 401);
      assert.equal(forIssuer.body.error, "invalid_jwt");
      const once = await jwtFor(agent);
      assert.equal((await authorize(once, "list_notes", { tag: "work", limit: 1 })).status, 200);
      const replayed = await authorize(
        once,
        "list_notes",
        { tag: "work", limit: 1 },
        partner.key,
        b.url,
      );
      assert.equal(replayed.status, 401);
      assert.match(String(replayed.body.message), /used already/);
      // Only the partner that offers it may ask.
      const stranger = await authorize(
        await jwtFor(agent),
        "list_notes",
        { tag: "work", limit: 1 },
        other.key,
      );
      assert.equal(stranger.status, 404);
      assert.equal(stranger.body.error, "capability_not_found");

      // Introspection shows the partner its own grants, compact.
      const introspected = await call(`${a.url}/agent/introspect`, {
        bearer: partner.key,
        body: { token: await jwtFor(agent, `${RESOURCE}/api`) },
      });
      assert.equal(introspected.body.active, true);
      assert.deepEqual(
        (introspected.body.agent_capability_grants as { capability: string }[])
          .map((g) => g.capability)
          .sort(),
        ["create_note", "list_notes"],
      );
      const elsewhere = await call(`${a.url}/agent/introspect`, {
        bearer: other.key,
        body: { token: await jwtFor(agent, "https://calendar.example/api") },
      });
      assert.deepEqual(elsewhere.body.agent_capability_grants, []);

      // Listing with the agent's own JWT tells it what it holds.
      const listed = await call(`${a.url}/capability/list`, {
        bearer: await jwtFor(agent, issuer),
      });
      assert.deepEqual(
        (listed.body.capabilities as Record<string, unknown>[]).map((c) => [
          c.name,
          c.grant_status,
        ]),
        [
          ["create_note", "not_granted"],
          ["list_notes", "granted"],
        ],
      );
    });

    it("lets an active agent ask for more, approved at /device", async () => {
      await declare([LIST_NOTES, CREATE_NOTE]);
      const agent = await agentWith(["list_notes"], ["list_notes"]);
      const asked = await call(`${b.url}/agent/request-capability`, {
        bearer: await jwtFor(agent, issuer),
        body: { capabilities: ["create_note", "list_notes"], reason: "to write one down" },
      });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      const grants = asked.body.agent_capability_grants as Record<string, unknown>[];
      assert.deepEqual(grants.map((g) => [g.capability, g.status]).sort(), [
        ["create_note", "pending"],
        ["list_notes", "active"],
      ]);
      const approval = asked.body.approval as { user_code: string };
      assert.equal(
        (await authorize(await jwtFor(agent), "create_note", { title: "t" })).status,
        403,
      );
      const seen = await decide(approval.user_code, "approve", ["create_note"]);
      assert.match(seen.shown, /asks to do more/);
      assert.doesNotMatch(seen.shown, /value="list_notes"/);
      assert.equal(seen.decided, 303);
      const allowed = await authorize(
        await jwtFor(agent),
        "create_note",
        { title: "t" },
        partner.key,
        b.url,
      );
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      assert.equal(allowed.body.constraints, undefined);
      // Nothing left to ask for: no approval.
      const again = await call(`${a.url}/agent/request-capability`, {
        bearer: await jwtFor(agent, issuer),
        body: { capabilities: ["create_note"] },
      });
      assert.equal(again.status, 200);
      assert.equal(again.body.approval, undefined);
      const host = await call(`${a.url}/agent/request-capability`, {
        bearer: await hostJwt(agent.host, issuer),
        body: { capabilities: ["create_note"] },
      });
      assert.equal(host.status, 401);
      assert.equal(host.body.error, "invalid_jwt");
    });

    it("stops grants at once: a capability withdrawn, an agent revoked, a partner key revoked", async () => {
      await declare([LIST_NOTES, CREATE_NOTE]);
      const agent = await agentWith(["create_note", "list_notes"], ["create_note", "list_notes"]);
      assert.equal(
        (await authorize(await jwtFor(agent), "create_note", { title: "t" })).status,
        200,
      );
      assert.equal((await declare([LIST_NOTES], partner.key, b.url)).status, 200);
      const withdrawn = await authorize(await jwtFor(agent), "create_note", { title: "t" });
      assert.equal(withdrawn.status, 404);
      assert.equal(withdrawn.body.error, "capability_not_found");
      const status = await call(`${a.url}/agent/status?agent_id=${agent.id}`, {
        bearer: await hostJwt(agent.host, issuer),
      });
      assert.deepEqual(
        (status.body.agent_capability_grants as { capability: string }[]).map((g) => g.capability),
        ["list_notes"],
      );
      // Declared again, the grant the person gave works again.
      await declare([LIST_NOTES, CREATE_NOTE]);
      assert.equal(
        (await authorize(await jwtFor(agent), "create_note", { title: "t" })).status,
        200,
      );

      await call(`${a.url}/agent/revoke`, {
        bearer: await hostJwt(agent.host, issuer),
        body: { agent_id: agent.id },
      });
      const revoked = await authorize(await jwtFor(agent), "list_notes", {}, partner.key, b.url);
      assert.equal(revoked.status, 403);
      assert.equal(revoked.body.error, "agent_revoked");

      const spare = await issueKey(a.service.ctx, "partner", partner.id, "spare");
      if (!spare.ok) throw new Error(spare.code);
      await revokeKey(a.service.ctx, "partner", spare.record.id);
      const revokedKey = await authorize(await jwtFor(agent), "list_notes", {}, spare.key);
      assert.equal(revokedKey.status, 403);
      assert.equal(revokedKey.body.error, "partner_key_revoked");
    });
  });
}
