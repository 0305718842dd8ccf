import { type Answer, type ApiCall, defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { publicEd25519Key, thumbprintOf } from "../../domain/agent-jwt.ts";
import {
  agentOfHost,
  approvalOf,
  reactivateAgent,
  registerAgent,
  statusOf,
} from "../../domain/agent-registration.ts";
import { audienceOfResources, judgeAgentJwt, judgeHostJwt, refusal } from "../../domain/agents.ts";
import { readRequestedGrants } from "../../domain/capabilities.ts";
import { grantsOfAgent, grantsOfPartner } from "../../domain/capability-grants.ts";
import { type RateLimiter, rateLimitHeaders } from "../../infra/rate-limit.ts";
import {
  bearerOf,
  judgePartnerCaller,
  MAX_BODY_BYTES,
  NO_STORE,
  ok,
  operation,
  refuseAgentAuthInput,
  refused,
  renderAgentAuthError,
} from "./agent-auth-answers.ts";

/**
 * AgentPass as an Agent Auth Protocol provider (v1.0-draft, section 5): discovery, agent
 * registration under a host, status, reactivation, revocation, key rotation, and introspection
 * for partners; capabilities are `agent-capabilities.ts`'s. Answers are `agent-auth-answers.ts`'s.
 */

const AGENT_AUTH_VERSION = "1.0-draft";

export const PATHS = {
  register: "/agent/register",
  request_capability: "/agent/request-capability",
  capabilities: "/capability/list",
  describe_capability: "/capability/describe",
  status: "/agent/status",
  reactivate: "/agent/reactivate",
  revoke: "/agent/revoke",
  revoke_host: "/host/revoke",
  rotate_key: "/agent/rotate-key",
  rotate_host_key: "/host/rotate-key",
  introspect: "/agent/introspect",
} as const;

const Jwk = z.record(z.string(), z.unknown()).meta({ description: "A public Ed25519 JWK" });
const AgentIdBody = z.object({ agent_id: z.string().min(1).max(100) });

export function agentAuthEndpoints(
  ctx: IdentityContext,
  issuer: string,
  limits: { registrationsPerIp: RateLimiter; badKeysPerIp: RateLimiter },
): Endpoint[] {
  const absolute = Object.fromEntries(
    Object.entries(PATHS).map(([name, path]) => [name, `${issuer}${path}`]),
  );

  const discovery = defineEndpoint({
    method: "GET",
    path: "/.well-known/agent-configuration",
    public: true,
    operation: {
      operationId: "agentAuthConfiguration",
      description:
        "What an Agent Auth client reads first: the issuer, algorithms (Ed25519), modes (delegated), approval methods (device authorization) and every endpoint as an absolute URL.",
      summary: "Agent Auth Protocol discovery (section 5.1)",
      tags: ["Agent Auth"],
      security: [],
      responses: {
        "200": {
          description: "The provider's configuration; endpoints are absolute URLs",
          content: { "application/json": { schema: z.object({}).passthrough() } },
        },
      },
    },
    handle: () => ({
      status: 200,
      headers: { "Cache-Control": "public, max-age=3600" },
      body: {
        version: AGENT_AUTH_VERSION,
        provider_name: "agentpass",
        description:
          "AgentPass: each agent its own key under its person's host; partners learn the person's verified email and which agent acts",
        issuer,
        algorithms: ["Ed25519"],
        modes: ["delegated"],
        approval_methods: ["device_authorization"],
        endpoints: absolute,
      },
    }),
  });

  const register = hostEndpoint({
    method: "POST",
    path: PATHS.register,
    operationId: "agentAuthRegister",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); the JWT carries `agent_public_key`. The agent is pending until its person types the answer's `user_code` at `/device`; poll `/agent/status`. `capabilities` asks for grants, optionally narrowed by constraints. Retrying with the same key answers the same agent.",
    summary: "Register an agent under a host (section 5.3); its person approves it at /device",
    body: z.object({
      name: z.string().min(1).max(200),
      host_name: z.string().max(200).optional(),
      capabilities: z.array(z.unknown()).max(50).optional(),
      mode: z.string().max(50).optional(),
      reason: z.string().max(500).optional(),
      preferred_method: z.string().max(100).optional(),
      login_hint: z.string().max(320).optional(),
      binding_message: z.string().max(500).optional(),
    }),
    registering: true,
    async handle(request, host, body) {
      const counted = await limits.registrationsPerIp.take(request.clientIp());
      if (!counted.ok) {
        return {
          status: 429,
          headers: rateLimitHeaders(counted),
          body: { error: "rate_limited", message: "Too many registrations from this address" },
        };
      }
      const wanted = await readRequestedGrants(ctx, body.capabilities ?? []);
      if (!wanted.ok) return refused(wanted);
      const registered = await registerAgent(
        ctx,
        host,
        {
          name: body.name,
          hostName: body.host_name,
          mode: body.mode,
          grants: wanted.grants,
          reason: body.reason,
        },
        request.clientAddress(),
      );
      if (!registered.ok) return refused(registered);
      const { agent } = registered;
      await ctx.audit.record({
        action: "agent.register",
        outcome: "success",
        actor: { kind: "service" },
        accountId: host.host?.accountId ?? null,
        subject: { kind: "agent", id: agent.id },
        client: {
          address: request.clientAddress(),
          userAgent: request.header("user-agent") ?? null,
        },
        detail: { agentName: agent.name, hostId: registered.hostId },
      });
      return ok({
        agent_id: agent.id,
        host_id: registered.hostId,
        name: agent.name,
        mode: "delegated",
        status: "pending",
        agent_capability_grants: await grantsOfAgent(ctx, agent.id),
        approval: approvalOf(issuer, registered.userCode),
      });
    },
  });

  const status = defineEndpoint({
    method: "GET",
    path: PATHS.status,
    maxBodyBytes: MAX_BODY_BYTES,
    renderError: renderAgentAuthError,
    operation: operation(
      "agentAuthStatus",
      "An agent's status (section 5.5), for its host",
      [{ hostJwt: [] }],
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); an agent of another host is 404 `agent_not_found`. A pending host may read it: that is how it learns its person approved.",
    ),
    admit: bearerOf,
    input: { query: z.object({ agent_id: z.string().min(1).max(100) }) },
    refuseInput: refuseAgentAuthInput,
    async handle(_request, { admitted, query }) {
      const host = await judgeHostJwt(ctx, admitted, issuer, false, true);
      if (!host.ok) return refused(host);
      if (!host.host) return refused(refusal(401, "invalid_jwt", "Invalid JWT: unknown host"));
      const agent = await agentOfHost(ctx, host.host, query.agent_id);
      if ("ok" in agent) return refused(agent);
      return ok(statusOf(ctx, agent, await grantsOfAgent(ctx, agent.id)));
    },
  });

  const reactivate = hostEndpoint({
    method: "POST",
    path: PATHS.reactivate,
    operationId: "agentAuthReactivate",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); an expired agent is active again with the grants it held; one past its absolute lifetime is revoked (403 `absolute_lifetime_exceeded`).",
    summary: "Reactivate an expired agent (section 5.6)",
    body: AgentIdBody,
    async handle(request, host, body) {
      const agent = await agentOfHost(ctx, knownHost(host), body.agent_id);
      if ("ok" in agent) return refused(agent);
      const done = await reactivateAgent(ctx, agent);
      if (!done.ok) return refused(done);
      await auditHostAct(request, host, "agent.reactivate", agent.id);
      const now = await ctx.agents.findAgent(agent.id);
      return ok(statusOf(ctx, now ?? agent, await grantsOfAgent(ctx, agent.id)));
    },
  });

  const revoke = hostEndpoint({
    method: "POST",
    path: PATHS.revoke,
    operationId: "agentAuthRevoke",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); the agent's JWTs and the tokens it minted stop on the next request, on every instance; the host's other agents keep working.",
    summary: "Revoke an agent of this host (section 5.7)",
    body: AgentIdBody,
    async handle(request, host, body) {
      const agent = await agentOfHost(ctx, knownHost(host), body.agent_id);
      if ("ok" in agent) return refused(agent);
      if (await ctx.agents.revokeAgent(agent.id, ctx.clock())) {
        await auditHostAct(request, host, "agent.revoke", agent.id);
      }
      return ok({ agent_id: agent.id, status: "revoked" });
    },
  });

  const rotateKey = hostEndpoint({
    method: "POST",
    path: PATHS.rotate_key,
    operationId: "agentAuthRotateKey",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); `public_key` replaces the agent's key; JWTs signed by the old one are refused from now.",
    summary: "Replace an agent's key (section 5.8); the old key stops at once",
    body: z.object({ agent_id: z.string().min(1).max(100), public_key: Jwk }),
    async handle(request, host, body) {
      const agent = await agentOfHost(ctx, knownHost(host), body.agent_id);
      if ("ok" in agent) return refused(agent);
      if (agent.status === "revoked") {
        return refused(refusal(403, "agent_revoked", "The agent has been revoked"));
      }
      const jwk = publicEd25519Key(body.public_key);
      if (!jwk) {
        return refused(
          refusal(400, "unsupported_algorithm", "public_key must be a public Ed25519 JWK"),
        );
      }
      if (!(await ctx.agents.rotateAgentKey(agent.id, jwk, await thumbprintOf(jwk)))) {
        return refused(refusal(409, "agent_exists", "An agent of this host has this key"));
      }
      await auditHostAct(request, host, "agent.rotate_key", agent.id);
      return ok({ agent_id: agent.id, status: statusOf(ctx, agent, []).status });
    },
  });

  const rotateHostKey = hostEndpoint({
    method: "POST",
    path: PATHS.rotate_host_key,
    operationId: "agentAuthRotateHostKey",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); signed by the current key; `public_key` replaces it, and the host's agents are untouched.",
    summary: "Replace the host's key (section 5.9); its agents keep working",
    body: z.object({ public_key: Jwk }),
    async handle(request, host, body) {
      const known = knownHost(host);
      const jwk = publicEd25519Key(body.public_key);
      if (!jwk) {
        return refused(
          refusal(400, "unsupported_algorithm", "public_key must be a public Ed25519 JWK"),
        );
      }
      const thumbprint = await thumbprintOf(jwk);
      if (!(await ctx.agents.rotateHostKey(known.id, jwk, thumbprint, ctx.clock()))) {
        return refused(refusal(409, "host_exists", "A host has this key already"));
      }
      await auditHostAct(request, host, "host.rotate_key", known.id);
      return ok({ host_id: known.id, status: known.status });
    },
  });

  const revokeHost = hostEndpoint({
    method: "POST",
    path: PATHS.revoke_host,
    operationId: "agentAuthRevokeHost",
    description:
      "`Authorization: Bearer <host JWT>` (`host+jwt`, `aud` this issuer, used once); the host and every agent under it are revoked; answers how many agents were.",
    summary: "Revoke this host and every agent under it (section 5.10)",
    body: z.object({}).passthrough(),
    bodyRequired: false,
    async handle(request, host) {
      const known = knownHost(host);
      const agentsRevoked = await ctx.agents.revokeHost(known.id, ctx.clock());
      await auditHostAct(request, host, "host.revoke", known.id, { agentsRevoked });
      return ok({ host_id: known.id, status: "revoked", agents_revoked: agentsRevoked });
    },
  });

  const introspect = defineEndpoint({
    method: "POST",
    path: PATHS.introspect,
    maxBodyBytes: MAX_BODY_BYTES,
    renderError: renderAgentAuthError,
    operation: {
      ...operation(
        "agentAuthIntrospect",
        "Introspect an agent JWT (section 5.12), authenticated with the partner key",
        [{ partnerKey: [] }],
      ),
      description:
        "`Authorization: Bearer <partner key>`: 401 `partner_key_invalid` for a missing or unknown key, 403 `partner_key_revoked` for a revoked one (or a suspended partner). The JWT's `aud` must be one of the partner's resource URLs (by origin), and its `jti` is spent: a JWT is introspected once, on every instance.",
    },
    admit: bearerOf,
    input: { body: z.object({ token: z.string().min(1).max(8192) }) },
    refuseInput: refuseAgentAuthInput,
    async handle(request, { admitted, body }) {
      const partner = await judgePartnerCaller(ctx, request, admitted, limits.badKeysPerIp);
      if (!("partnerId" in partner)) return partner;
      const resources = await ctx.oauth.resourcesOf(partner.partnerId);
      const verdict = await judgeAgentJwt(ctx, body.token, audienceOfResources(resources));
      if (!verdict.ok) return { status: 200, headers: NO_STORE, body: { active: false } };
      const { agent } = verdict;
      ctx.usage.record(partner.partnerId, "success", partner.now, verdict.accountId, agent.id);
      const status = statusOf(ctx, agent, []);
      const grants = await grantsOfPartner(ctx, partner.partnerId, agent.id);
      return ok({
        active: true,
        agent_id: agent.id,
        agent_name: agent.name,
        host_id: agent.hostId,
        ...(agent.host.name && { host_name: agent.host.name }),
        user_id: verdict.accountId,
        email: verdict.email,
        mode: "delegated",
        agent_capability_grants: grants,
        ...("expires_at" in status && { expires_at: status.expires_at }),
      });
    },
  });

  return [
    discovery,
    register,
    status,
    reactivate,
    revoke,
    rotateKey,
    rotateHostKey,
    revokeHost,
    introspect,
  ];

  /** A POST endpoint authenticated with a host's JWT, its body parsed by `body`. */
  function hostEndpoint<B extends z.ZodType>(definition: {
    method: "POST";
    path: string;
    operationId: string;
    summary: string;
    description: string;
    body: B;
    bodyRequired?: boolean;
    registering?: boolean;
    handle(
      request: ApiCall,
      host: Extract<Awaited<ReturnType<typeof judgeHostJwt>>, { ok: true }>,
      body: z.output<B>,
    ): Promise<Answer>;
  }): Endpoint {
    return defineEndpoint({
      method: definition.method,
      path: definition.path,
      maxBodyBytes: MAX_BODY_BYTES,
      renderError: renderAgentAuthError,
      operation: operation(
        definition.operationId,
        definition.summary,
        [{ hostJwt: [] }],
        definition.description,
      ),
      admit: bearerOf,
      input: { body: definition.body, bodyRequired: definition.bodyRequired ?? true },
      refuseInput: refuseAgentAuthInput,
      async handle(request, { admitted, body }) {
        const host = await judgeHostJwt(ctx, admitted, issuer, definition.registering ?? false);
        if (!host.ok) return refused(host);
        return definition.handle(request, host, body as z.output<B>);
      },
    });
  }

  async function auditHostAct(
    request: ApiCall,
    host: Extract<Awaited<ReturnType<typeof judgeHostJwt>>, { ok: true }>,
    action:
      | "agent.revoke"
      | "agent.reactivate"
      | "agent.rotate_key"
      | "host.rotate_key"
      | "host.revoke",
    subjectId: string,
    detail: Record<string, number | string> = {},
  ) {
    await ctx.audit.record({
      action,
      outcome: "success",
      actor: { kind: "service" },
      accountId: host.host?.accountId ?? null,
      subject: { kind: action.startsWith("host") ? "host" : "agent", id: subjectId },
      client: { address: request.clientAddress(), userAgent: request.header("user-agent") ?? null },
      detail: { by: "host", hostId: host.host?.id ?? null, ...detail },
    });
  }
}

/** A judged host that is known: every endpoint but registration refuses an unknown one first. */
function knownHost(host: { host: import("../../store/agent-store.ts").HostRecord | null }) {
  if (!host.host) throw new Error("judgeHostJwt answered an unknown host outside registration");
  return host.host;
}
