import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
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
  signingClock,
} from "./support/agent-auth-client.ts";
import { openTestIdentity } from "./support/harness.ts";
import { startInstance } from "./support/instances.ts";
import { webClient } from "./support/web-client.ts";

/**
 * AgentPass as an Agent Auth Protocol provider (issue 54): hosts and agents with their own
 * Ed25519 keys, registered with a host's JWT, approved by their person at /device, acting with
 * one-time agent JWTs that partners verify (`POST /api/verify`, `POST /agent/introspect` with
 * the partner key) or with session tokens an agent minted. Two instances serve one database
 * under one PUBLIC_URL, over real HTTP, with `jose` as the outside client.
 */

const RESOURCE = "https://notes.example";

for (const engine of testEngines()) {
  describe(`Agent Auth provider (${engine})`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let a: Awaited<ReturnType<typeof startInstance>>;
    let b: Awaited<ReturnType<typeof startInstance>>;
    let issuer: string;
    let person: { id: string; email: string };
    let userKey: string;
    let partner: { id: string; key: string; ownerId: string };

    before(async () => {
      database = await createTestDatabase(engine);
      const port = await freePort();
      issuer = `http://127.0.0.1:${port}`;
      a = await startInstance(database, issuer, port);
      b = await startInstance(database, issuer, await freePort());
      const { ctx } = a.service;
      const owner = await createAccount(ctx, `owner-${randomUUID()}@example.com`);
      if (!owner.ok) throw new Error(owner.code);
      const made = await createPartner(ctx, { ownerAccountId: owner.account.id, name: "Notes" });
      if (!made.ok) throw new Error(made.reason);
      const key = await issueKey(ctx, "partner", made.partner.id, "server");
      if (!key.ok) throw new Error(key.code);
      partner = { id: made.partner.id, key: key.key, ownerId: owner.account.id };
      assert.deepEqual(await addPartnerResource(ctx, partner.id, `${RESOURCE}/api`), { ok: true });
    });
    // A person of their own for each test: approving spends the person's budget of codes.
    beforeEach(async () => {
      const { ctx } = a.service;
      const created = await createAccount(ctx, `person-${randomUUID()}@example.com`);
      if (!created.ok) throw new Error(created.code);
      person = created.account;
      const issued = await issueKey(ctx, "user", person.id, "laptop");
      if (!issued.ok) throw new Error(issued.code);
      userKey = issued.key;
    });
    after(async () => {
      await b.server.close();
      await a.server.close();
      await database.drop();
    });

    /** Registers an agent under `host` at instance `at`; answers the registration. */
    async function register(host: Ed25519Key, agent: Ed25519Key, name: string, at = a.url) {
      return call(`${at}/agent/register`, {
        bearer: await hostJwt(host, issuer, { agent_public_key: agent.jwk }),
        body: { name, host_name: "laptop" },
      });
    }

    /** The person's browser: approves (or denies) `userCode` on the /device page. */
    async function decide(userCode: string, decision: "approve" | "deny", accountId = person.id) {
      const browser = webClient({ request: (url, init) => fetch(url, init) }, issuer);
      browser.jar.set("agentpass_session", await startWebSession(a.service.ctx, accountId));
      await browser.get("/device");
      const page = await browser.submit("/device", { code: userCode });
      const shown = await page.text();
      const decided = await browser.post("/device", { code: userCode, decision });
      return { shown, decided: decided.status };
    }

    /** A registered, approved agent of the person. */
    async function activeAgent(name: string, host?: Ed25519Key) {
      const hostKey = host ?? (await ed25519Key());
      const key = await ed25519Key();
      const registered = await register(hostKey, key, name);
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const approval = registered.body.approval as { user_code: string };
      assert.equal((await decide(approval.user_code, "approve")).decided, 303);
      return { host: hostKey, key, id: registered.body.agent_id as string };
    }

    function verify(token: string, at = a.url, key = partner.key) {
      return call(`${at}/api/verify`, { bearer: key, body: { sessionToken: token } });
    }

    it("publishes its configuration with absolute endpoints", async () => {
      const answer = await call(`${b.url}/.well-known/agent-configuration`);
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get("cache-control"), "public, max-age=3600");
      const config = answer.body as Record<string, unknown> & { endpoints: Record<string, string> };
      assert.equal(config.version, "1.0-draft");
      assert.equal(config.issuer, issuer);
      assert.deepEqual(config.algorithms, ["Ed25519"]);
      assert.deepEqual(config.modes, ["delegated"]);
      assert.deepEqual(config.approval_methods, ["device_authorization"]);
      assert.equal(config.endpoints.register, `${issuer}/agent/register`);
      assert.equal(config.endpoints.introspect, `${issuer}/agent/introspect`);
      for (const url of Object.values(config.endpoints)) assert.ok(url.startsWith(`${issuer}/`));
    });

    it("registers a pending agent that its person approves at /device", async () => {
      const host = await ed25519Key();
      const key = await ed25519Key();
      const hostile = "claude-code <script>alert(1)</script>\u202e";
      const registered = await register(host, key, hostile);
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      assert.equal(registered.body.status, "pending");
      assert.match(String(registered.body.agent_id), /^agt_[A-Za-z0-9_-]{22}$/);
      assert.match(String(registered.body.host_id), /^hst_/);
      const approval = registered.body.approval as Record<string, unknown>;
      assert.equal(approval.method, "device_authorization");
      assert.equal(approval.verification_uri, `${issuer}/device`);
      assert.equal(
        approval.verification_uri_complete,
        `${issuer}/device?code=${approval.user_code}`,
        "a link fills the code in; the person still confirms",
      );
      const agentId = registered.body.agent_id as string;
      // The host polls its status: pending until the person decides.
      const pending = await call(`${b.url}/agent/status?agent_id=${agentId}`, {
        bearer: await hostJwt(host, issuer),
      });
      assert.equal(pending.status, 200, JSON.stringify(pending.body));
      assert.equal(pending.body.status, "pending");
      const early = await call(`${b.url}/agent/revoke`, {
        bearer: await hostJwt(host, issuer),
        body: { agent_id: agentId },
      });
      assert.equal(early.status, 403, "a pending host may only register and read status");
      assert.equal(early.body.error, "host_pending");
      // A retry with the same key is the same agent, with a fresh code.
      const again = await register(host, key, hostile, b.url);
      assert.equal(again.body.agent_id, agentId);
      const { shown, decided } = await decide(
        (again.body.approval as { user_code: string }).user_code,
        "approve",
      );
      assert.match(shown, /An agent asks to act for you/);
      assert.ok(!shown.includes("<script>alert(1)"), "the agent's name is escaped");
      assert.ok(!shown.includes("\u202e"), "bidi controls are dropped");
      assert.equal(decided, 303);
      const status = await call(`${b.url}/agent/status?agent_id=${agentId}`, {
        bearer: await hostJwt(host, issuer),
      });
      assert.equal(status.status, 200, JSON.stringify(status.body));
      assert.equal(status.body.status, "active");
      assert.equal(status.body.user_id, person.id);
      assert.equal(status.body.mode, "delegated");
      assert.ok(Date.parse(String(status.body.expires_at)) > Date.now());
      // The first code, never used, approves nothing now.
      const stale = await decide((approval as { user_code: string }).user_code, "approve");
      assert.equal(stale.decided, 400);
      const twice = await register(host, key, hostile);
      assert.equal(twice.status, 409);
      assert.equal(twice.body.error, "agent_exists");
    });

    it("lets partners verify an agent's JWT once, on every instance, with its name", async () => {
      const agent = await activeAgent("claude-code on laptop");
      const jwt = await agentJwt(
        agent.key,
        agent.host.thumbprint,
        agent.id,
        `${RESOURCE}/api/notes`,
      );
      const verified = await verify(jwt);
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.deepEqual(verified.body, {
        email: person.email,
        agent: { id: agent.id, name: "claude-code on laptop" },
      });
      const replayed = await verify(jwt, b.url);
      assert.equal(replayed.status, 401);
      assert.equal(replayed.body.code, "session_token_invalid");
      const elsewhere = await agentJwt(
        agent.key,
        agent.host.thumbprint,
        agent.id,
        "https://other.example",
      );
      assert.equal((await verify(elsewhere)).status, 401, "aud must be the partner's resource");
      const stranger = await ed25519Key();
      const forged = await agentJwt(stranger, agent.host.thumbprint, agent.id, RESOURCE);
      assert.equal((await verify(forged)).status, 401, "signed by another key");
      const hostAsAgent = await agentJwt(
        agent.key,
        agent.host.thumbprint,
        agent.id,
        RESOURCE,
        {},
        {
          typ: "host+jwt",
        },
      );
      assert.equal((await verify(hostAsAgent)).status, 401, "typ must be agent+jwt");
    });

    it("introspects agent JWTs for partners that show their key", async () => {
      const agent = await activeAgent("scheduled job");
      const jwt = () => agentJwt(agent.key, agent.host.thumbprint, agent.id, RESOURCE);
      const anonymous = await call(`${a.url}/agent/introspect`, { body: { token: await jwt() } });
      assert.equal(anonymous.status, 401);
      assert.deepEqual(anonymous.body, {
        error: "partner_key_invalid",
        message: "Invalid partner key",
      });
      const token = await jwt();
      const active = await call(`${a.url}/agent/introspect`, {
        bearer: partner.key,
        body: { token },
      });
      assert.equal(active.status, 200, JSON.stringify(active.body));
      assert.equal(active.body.active, true);
      assert.equal(active.body.agent_id, agent.id);
      assert.equal(active.body.agent_name, "scheduled job");
      assert.equal(active.body.user_id, person.id);
      assert.equal(active.body.email, person.email);
      assert.equal(active.body.host_id !== undefined, true);
      const again = await call(`${b.url}/agent/introspect`, {
        bearer: partner.key,
        body: { token },
      });
      assert.deepEqual(again.body, { active: false }, "a JWT is introspected once");
      const malformed = await call(`${a.url}/agent/introspect`, {
        bearer: partner.key,
        body: "{not json",
      });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.error, "invalid_request");
    });

    it("attributes session tokens an agent minted, and keeps {email} for the others", async () => {
      const agent = await activeAgent("cursor");
      const minted = await call(`${a.url}/api/session-tokens`, {
        bearer: userKey,
        body: { agent: await agentJwt(agent.key, agent.host.thumbprint, agent.id, issuer) },
      });
      assert.equal(minted.status, 201, JSON.stringify(minted.body));
      assert.deepEqual(minted.body.agent, { id: agent.id, name: "cursor" });
      const token = minted.body.sessionToken as string;
      assert.deepEqual((await verify(token, b.url)).body, {
        email: person.email,
        agent: { id: agent.id, name: "cursor" },
      });
      const introspected = await fetch(`${b.url}/oauth/introspect`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${partner.key}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ token }).toString(),
      }).then((response) => response.json());
      assert.equal(introspected.sub, person.id, "sub stays the person");
      assert.deepEqual(introspected.act, { sub: agent.id, agent_name: "cursor" });
      const plain = await call(`${a.url}/api/session-tokens`, { bearer: userKey, body: {} });
      assert.deepEqual((await verify(plain.body.sessionToken as string)).body, {
        email: person.email,
      });
      const wrongAudience = await call(`${a.url}/api/session-tokens`, {
        bearer: userKey,
        body: { agent: await agentJwt(agent.key, agent.host.thumbprint, agent.id, RESOURCE) },
      });
      assert.equal(wrongAudience.status, 401);
      assert.equal(wrongAudience.body.code, "agent_jwt_invalid");
      assert.match(String(wrongAudience.body.error), /^Invalid agent JWT: The JWT's aud/);
      // Another person's user key cannot mint as this agent.
      const other = await createAccount(a.service.ctx, `other-${randomUUID()}@example.com`);
      if (!other.ok) throw new Error(other.code);
      const otherKey = await issueKey(a.service.ctx, "user", other.account.id, "laptop");
      if (!otherKey.ok) throw new Error(otherKey.code);
      const stolen = await call(`${a.url}/api/session-tokens`, {
        bearer: otherKey.key,
        body: { agent: await agentJwt(agent.key, agent.host.thumbprint, agent.id, issuer) },
      });
      assert.equal(stolen.status, 401);
      assert.equal(stolen.body.code, "agent_jwt_invalid");
    });

    it("revokes one agent and leaves the other working, on every instance", async () => {
      const host = await ed25519Key();
      const first = await activeAgent("first", host);
      const second = await activeAgent("second", host);
      const tokenOf = async (agent: typeof first) => {
        const minted = await call(`${a.url}/api/session-tokens`, {
          bearer: userKey,
          body: { agent: await agentJwt(agent.key, host.thumbprint, agent.id, issuer) },
        });
        return minted.body.sessionToken as string;
      };
      const firstToken = await tokenOf(first);
      const secondToken = await tokenOf(second);
      const revoked = await call(`${a.url}/agent/revoke`, {
        bearer: await hostJwt(host, issuer),
        body: { agent_id: first.id },
      });
      assert.deepEqual(revoked.body, { agent_id: first.id, status: "revoked" });
      assert.equal((await verify(firstToken, b.url)).status, 401, "the next request fails");
      assert.equal((await verify(secondToken, b.url)).status, 200);
      const fresh = await agentJwt(first.key, host.thumbprint, first.id, RESOURCE);
      assert.equal((await verify(fresh, b.url)).status, 401);
      // Revoking the saved login's user key ends every token it minted, agents' too.
      const extra = await issueKey(a.service.ctx, "user", person.id, "spare");
      if (!extra.ok) throw new Error(extra.code);
      const spareToken = await call(`${a.url}/api/session-tokens`, {
        bearer: extra.key,
        body: { agent: await agentJwt(second.key, host.thumbprint, second.id, issuer) },
      });
      await revokeKey(a.service.ctx, "user", extra.record.id);
      assert.equal((await verify(spareToken.body.sessionToken as string, b.url)).status, 401);
      // The whole host: its other agent ends too.
      const hostRevoked = await call(`${b.url}/host/revoke`, {
        bearer: await hostJwt(host, issuer),
        body: {},
      });
      assert.equal(hostRevoked.status, 200, JSON.stringify(hostRevoked.body));
      assert.equal(hostRevoked.body.status, "revoked");
      assert.equal(hostRevoked.body.agents_revoked, 1);
      assert.equal((await verify(secondToken, a.url)).status, 401);
      const afterwards = await register(host, await ed25519Key(), "third");
      assert.equal(afterwards.status, 403);
      assert.equal(afterwards.body.error, "host_revoked");
    });

    it("rotates an agent's key and a host's key; the old keys stop at once", async () => {
      const agent = await activeAgent("rotating");
      const newAgentKey = await ed25519Key();
      const rotated = await call(`${a.url}/agent/rotate-key`, {
        bearer: await hostJwt(agent.host, issuer),
        body: { agent_id: agent.id, public_key: newAgentKey.jwk },
      });
      assert.deepEqual(rotated.body, { agent_id: agent.id, status: "active" });
      const old = await agentJwt(agent.key, agent.host.thumbprint, agent.id, RESOURCE);
      assert.equal((await verify(old, b.url)).status, 401);
      const renewed = await agentJwt(newAgentKey, agent.host.thumbprint, agent.id, RESOURCE);
      assert.equal((await verify(renewed, b.url)).status, 200);
      const newHostKey = await ed25519Key();
      const hostRotated = await call(`${a.url}/host/rotate-key`, {
        bearer: await hostJwt(agent.host, issuer),
        body: { public_key: newHostKey.jwk },
      });
      assert.equal(hostRotated.status, 200, JSON.stringify(hostRotated.body));
      const stale = await call(`${b.url}/agent/status?agent_id=${agent.id}`, {
        bearer: await hostJwt(agent.host, issuer),
      });
      assert.equal(stale.status, 401);
      const viaNewHost = await agentJwt(newAgentKey, newHostKey.thumbprint, agent.id, RESOURCE);
      assert.equal((await verify(viaNewHost, b.url)).status, 200, "its agents keep working");
      const badKey = await call(`${a.url}/agent/rotate-key`, {
        bearer: await hostJwt(newHostKey, issuer),
        body: { agent_id: agent.id, public_key: { kty: "EC", crv: "P-256", x: "a", y: "b" } },
      });
      assert.equal(badKey.status, 400);
      assert.equal(badKey.body.error, "unsupported_algorithm");
    });

    it("refuses replayed, foreign and malformed host JWTs in the protocol's format", async () => {
      const agent = await activeAgent("careful");
      const jwt = await hostJwt(agent.host, issuer);
      const first = await call(`${a.url}/agent/status?agent_id=${agent.id}`, { bearer: jwt });
      assert.equal(first.status, 200);
      const replay = await call(`${b.url}/agent/status?agent_id=${agent.id}`, { bearer: jwt });
      assert.equal(replay.status, 401, "a host JWT is used once, on every instance");
      assert.equal(replay.body.error, "invalid_jwt");
      const wrongAudience = await hostJwt(agent.host, "https://elsewhere.example");
      const refused = await call(`${a.url}/agent/status?agent_id=${agent.id}`, {
        bearer: wrongAudience,
      });
      assert.equal(refused.status, 401);
      const stranger = await activeAgent("someone else's");
      const notMine = await call(`${a.url}/agent/revoke`, {
        bearer: await hostJwt(agent.host, issuer),
        body: { agent_id: stranger.id },
      });
      assert.equal(notMine.status, 404, "another host's agent is not found");
      assert.equal(notMine.body.error, "agent_not_found");
      const missing = await call(`${a.url}/agent/revoke`, { body: { agent_id: agent.id } });
      assert.equal(missing.status, 401);
      const notJson = await call(`${a.url}/agent/revoke`, {
        bearer: await hostJwt(agent.host, issuer),
        body: "[1,",
      });
      assert.equal(notJson.status, 400);
      assert.equal(notJson.body.error, "invalid_request");
      const autonomous = await call(`${a.url}/agent/register`, {
        bearer: await hostJwt(agent.host, issuer, { agent_public_key: (await ed25519Key()).jwk }),
        body: { name: "bot", mode: "autonomous" },
      });
      assert.equal(autonomous.status, 400);
      assert.equal(autonomous.body.error, "unsupported_mode");
    });

    it("rejects an agent its person denies", async () => {
      const host = await ed25519Key();
      const registered = await register(host, await ed25519Key(), "unwanted");
      const code = (registered.body.approval as { user_code: string }).user_code;
      assert.equal((await decide(code, "deny")).decided, 303);
      // The host stays pending (nobody approved it); the agent is rejected for good.
      const first = await ed25519Key();
      const retry = await register(host, first, "wanted");
      assert.equal(retry.status, 200);
      const approved = await decide(
        (retry.body.approval as { user_code: string }).user_code,
        "approve",
      );
      assert.equal(approved.decided, 303);
      const status = await call(`${a.url}/agent/status?agent_id=${registered.body.agent_id}`, {
        bearer: await hostJwt(host, issuer),
      });
      assert.equal(status.body.status, "rejected");
    });

    it("lists the person's agents by host on /keys, with partners, and revokes one there", async () => {
      const host = await ed25519Key();
      const kept = await activeAgent("kept <b>agent</b>", host);
      const dropped = await activeAgent("dropped", host);
      const jwt = await agentJwt(kept.key, host.thumbprint, kept.id, RESOURCE);
      assert.equal((await verify(jwt)).status, 200);
      await a.service.ctx.usage.flush();
      await a.service.ctx.agentUse.flush();
      const browser = webClient({ request: (url, init) => fetch(url, init) }, issuer);
      browser.jar.set("agentpass_session", await startWebSession(a.service.ctx, person.id));
      const page = await browser.text("/keys");
      assert.match(page, /<h2 id="agents">Agents<\/h2>/);
      assert.ok(page.includes("kept &lt;b&gt;agent&lt;/b&gt;"), "the agent's name is escaped");
      assert.match(page, new RegExp(`data-partner="${partner.id}">Notes: `));
      const confirm = await browser.text(`/agents/${dropped.id}/revoke`);
      assert.match(confirm, /Revoke this agent\?/);
      const revoked = await browser.post(`/agents/${dropped.id}/revoke`, { confirm: "yes" });
      assert.equal(revoked.status, 303);
      const droppedJwt = await agentJwt(dropped.key, host.thumbprint, dropped.id, RESOURCE);
      assert.equal((await verify(droppedJwt, b.url)).status, 401);
      const keptJwt = await agentJwt(kept.key, host.thumbprint, kept.id, RESOURCE);
      assert.equal((await verify(keptJwt, b.url)).status, 200);
      // Another person cannot revoke it: not found.
      const stranger = webClient({ request: (url, init) => fetch(url, init) }, issuer);
      const other = await createAccount(a.service.ctx, `other-${randomUUID()}@example.com`);
      if (!other.ok) throw new Error(other.code);
      stranger.jar.set("agentpass_session", await startWebSession(a.service.ctx, other.account.id));
      await stranger.get("/keys");
      assert.equal(
        (await stranger.post(`/agents/${kept.id}/revoke`, { confirm: "yes" })).status,
        404,
      );
      const activity = await browser.text("/activity");
      assert.ok(
        activity.includes(`data-agents="${partner.id}">kept &lt;b&gt;agent&lt;/b&gt;`),
        "the activity page names the agent the partner saw",
      );
      const owner = webClient({ request: (url, init) => fetch(url, init) }, issuer);
      owner.jar.set("agentpass_session", await startWebSession(a.service.ctx, partner.ownerId));
      const usage = await owner.text(`/partners/${partner.id}`);
      assert.match(
        usage,
        new RegExp(`data-agent="${kept.id}"><td>${person.email.replace(/[.+]/g, "\\$&")}</td>`),
      );
      const log = await browser.text("/account/security");
      assert.match(log, /Agent revoked/);
      assert.match(log, /Agent approved/);
    });

    it("never lets a host linked to one person serve another", async () => {
      const agent = await activeAgent("mine");
      const registered = await register(agent.host, await ed25519Key(), "sneaky");
      const other = await createAccount(a.service.ctx, `other-${randomUUID()}@example.com`);
      if (!other.ok) throw new Error(other.code);
      const code = (registered.body.approval as { user_code: string }).user_code;
      assert.equal((await decide(code, "approve", other.account.id)).decided, 400);
    });
  });

  describe(`agent lifetimes (${engine})`, () => {
    it("expires an idle agent, reactivates it, and revokes it past its lifetime", async () => {
      const identity = await openTestIdentity(engine, {
        PUBLIC_URL: "http://127.0.0.1:9",
        AGENT_IDLE_TTL: "3600",
        AGENT_ABSOLUTE_LIFETIME: "86400",
      });
      signingClock.now = identity.now;
      try {
        const issuer = "http://127.0.0.1:9";
        const request = (path: string, bearer: string, body?: unknown) =>
          identity.app
            .request(path, {
              method: body === undefined ? "GET" : "POST",
              headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
              ...(body !== undefined && { body: JSON.stringify(body) }),
            })
            .then(async (response) => ({ status: response.status, body: await response.json() }));
        const host = await ed25519Key();
        const key = await ed25519Key();
        const registered = await request(
          "/agent/register",
          await hostJwt(host, issuer, { agent_public_key: key.jwk }),
          { name: "nightly" },
        );
        assert.equal(registered.status, 200, JSON.stringify(registered.body));
        const person = await identity.account();
        const pending = await identity.ctx.agents.findPendingAgentApproval(
          (await import("../src/domain/device-login.ts")).hashUserCode(
            identity.ctx,
            registered.body.approval.user_code,
          ),
          identity.now(),
        );
        assert.ok(pending);
        assert.equal(
          await identity.ctx.agents.decideAgentApproval(
            pending.deviceHash,
            person.id,
            "approve",
            identity.now(),
          ),
          "decided",
        );
        const id = registered.body.agent_id as string;
        const status = async () =>
          (await request(`/agent/status?agent_id=${id}`, await hostJwt(host, issuer))).body.status;
        assert.equal(await status(), "active");
        identity.advance(3_600_000);
        assert.equal(await status(), "expired");
        const minted = await request(
          "/api/session-tokens",
          (await identity.userKey(person.id)).key,
          {
            agent: await agentJwt(key, host.thumbprint, id, issuer),
          },
        );
        assert.equal(minted.status, 401, "an expired agent mints nothing");
        const reactivated = await request("/agent/reactivate", await hostJwt(host, issuer), {
          agent_id: id,
        });
        assert.equal(reactivated.status, 200, JSON.stringify(reactivated.body));
        assert.equal(reactivated.body.status, "active");
        identity.advance(86_400_000);
        const outlived = await request("/agent/reactivate", await hostJwt(host, issuer), {
          agent_id: id,
        });
        assert.equal(outlived.status, 403);
        assert.equal(outlived.body.error, "absolute_lifetime_exceeded");
      } finally {
        signingClock.now = () => Date.now();
        await identity.close();
      }
    });
  });
}
