import { defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { isAgentJwt } from "../../domain/agent-jwt.ts";
import { approvalOf } from "../../domain/agent-registration.ts";
import { judgeAgentJwt, judgeHostJwt, refusal } from "../../domain/agents.ts";
import { declareCapabilities, readRequestedGrants } from "../../domain/capabilities.ts";
import { authorizeExecution } from "../../domain/capability-execution.ts";
import { grantsOfAgent, requestCapabilities } from "../../domain/capability-grants.ts";
import type { RateLimiter } from "../../infra/rate-limit.ts";
import { rateLimitHeaders } from "../../infra/rate-limit.ts";
import type { CapabilityRecord } from "../../store/capability-store.ts";
import { PATHS } from "./agent-auth.ts";
import {
  bearerOf,
  judgePartnerCaller,
  MAX_BODY_BYTES,
  ok,
  operation,
  refuseAgentAuthInput,
  refused,
  renderAgentAuthError,
} from "./agent-auth-answers.ts";

/** A partner's whole declaration: up to 50 capabilities, each with its schemas. */
const MAX_DECLARATION_BYTES = 256 * 1024;

/**
 * Capabilities of the Agent Auth Protocol (sections 5.2, 5.4, 5.11) at AgentPass: the list and
 * descriptions of what partners offer, an agent's request for more grants, and the check a
 * partner's location makes before it executes one (`POST /capability/authorize`, AgentPass's
 * own: the partner forwards a refusal as its answer, since it is section 5.11's).
 */
export function agentCapabilityEndpoints(
  ctx: IdentityContext,
  issuer: string,
  limits: { registrationsPerIp: RateLimiter; badKeysPerIp: RateLimiter },
): Endpoint[] {
  /**
   * Who lists: nobody (public capabilities, which all are), a host, or an agent that learns
   * which it holds (`granted`); a JWT that fails its checks is refused rather than ignored.
   */
  async function lister(token: string | undefined) {
    if (!token) return { ok: true as const, granted: null };
    if (isAgentJwt(token)) {
      const agent = await judgeAgentJwt(ctx, token, (aud) => aud === issuer);
      if (!agent.ok) return agent;
      const grants = await ctx.capabilities.grantsOf(agent.agent.id);
      const active = grants.filter((grant) => grant.status === "active");
      return { ok: true as const, granted: new Set(active.map((grant) => grant.capability)) };
    }
    const host = await judgeHostJwt(ctx, token, issuer, false, true);
    return host.ok ? { ok: true as const, granted: null } : host;
  }
  const grantStatus = (granted: Set<string> | null, name: string) =>
    granted && { grant_status: granted.has(name) ? "granted" : "not_granted" };

  const list = defineEndpoint({
    method: "GET",
    path: PATHS.capabilities,
    public: true,
    renderError: renderAgentAuthError,
    operation: operation(
      "agentAuthCapabilities",
      "The capabilities partners offer agents (section 5.2); with an agent JWT, which it holds",
      [{}, { hostJwt: [] }, { agentJwt: [] }],
      "Public: names and descriptions, filtered by `query` (every word in either). With an agent JWT (`aud` this issuer), each carries `grant_status`. One page: `has_more` is false.",
    ),
    admit: bearerOf,
    input: { query: z.object({ query: z.string().max(200).optional() }) },
    refuseInput: refuseAgentAuthInput,
    async handle(_request, { admitted, query }) {
      const who = await lister(admitted);
      if (!who.ok) return refused(who);
      const words = query.query?.toLowerCase().split(/\s+/).filter(Boolean) ?? [];
      const matches = (capability: CapabilityRecord) =>
        words.every((word) =>
          `${capability.name} ${capability.description}`.toLowerCase().includes(word),
        );
      const offered = (await ctx.capabilities.list()).filter(matches);
      return ok({
        capabilities: offered.map((capability) => ({
          name: capability.name,
          description: capability.description,
          ...grantStatus(who.granted, capability.name),
        })),
        next_cursor: null,
        has_more: false,
      });
    },
  });

  const describe = defineEndpoint({
    method: "GET",
    path: PATHS.describe_capability,
    public: true,
    renderError: renderAgentAuthError,
    operation: operation(
      "agentAuthDescribeCapability",
      "One capability in full (section 5.2.1)",
      [{}, { hostJwt: [] }, { agentJwt: [] }],
      "Its input and output JSON Schemas, the partner offering it and its `location`: where an agent sends `{ capability, arguments }` with a JWT whose `aud` is that URL. 404 `capability_not_found` for no such name.",
    ),
    admit: bearerOf,
    input: { query: z.object({ name: z.string().min(1).max(200) }) },
    refuseInput: refuseAgentAuthInput,
    async handle(_request, { admitted, query }) {
      const who = await lister(admitted);
      if (!who.ok) return refused(who);
      const capability = await ctx.capabilities.find(query.name);
      if (!capability) return refused(refusal(404, "capability_not_found", "No such capability"));
      return ok({
        name: capability.name,
        description: capability.description,
        location: capability.location,
        partner: capability.partnerName,
        ...(capability.input && { input: capability.input }),
        ...(capability.output && { output: capability.output }),
        ...grantStatus(who.granted, capability.name),
      });
    },
  });

  const request = defineEndpoint({
    method: "POST",
    path: PATHS.request_capability,
    maxBodyBytes: MAX_BODY_BYTES,
    renderError: renderAgentAuthError,
    operation: operation(
      "agentAuthRequestCapability",
      "An agent asks for more capabilities (section 5.4); its person approves them at /device",
      [{ agentJwt: [] }],
      "`Authorization: Bearer <agent JWT>` (`aud` this issuer). Grants it holds already are answered as they are; the others are pending, with an `approval` whose code its person confirms at `/device`, choosing which to grant.",
    ),
    admit: bearerOf,
    input: {
      body: z.object({
        capabilities: z.array(z.unknown()).min(1).max(50),
        reason: z.string().max(500).optional(),
        preferred_method: z.string().max(100).optional(),
        login_hint: z.string().max(320).optional(),
        binding_message: z.string().max(500).optional(),
      }),
    },
    refuseInput: refuseAgentAuthInput,
    async handle(call, { admitted, body }) {
      if (!admitted) return refused(refusal(401, "invalid_jwt", "Invalid JWT: send an agent JWT"));
      const counted = await limits.registrationsPerIp.take(call.clientIp());
      if (!counted.ok) {
        return {
          status: 429,
          headers: rateLimitHeaders(counted),
          body: { error: "rate_limited", message: "Too many requests from this address" },
        };
      }
      const agent = await judgeAgentJwt(ctx, admitted, (aud) => aud === issuer);
      if (!agent.ok) return refused(agent);
      const wanted = await readRequestedGrants(ctx, body.capabilities);
      if (!wanted.ok) return refused(wanted);
      const asked = await requestCapabilities(
        ctx,
        agent.agent,
        wanted.grants,
        body.reason ?? null,
        call.clientAddress(),
      );
      const names = new Set(wanted.grants.map((grant) => grant.capability));
      const grants = (await grantsOfAgent(ctx, agent.agent.id)).filter((grant) =>
        names.has(grant.capability),
      );
      return ok({
        agent_id: agent.agent.id,
        agent_capability_grants: grants,
        ...(asked.userCode && { approval: approvalOf(issuer, asked.userCode) }),
      });
    },
  });

  const authorize = defineEndpoint({
    method: "POST",
    path: "/capability/authorize",
    maxBodyBytes: MAX_BODY_BYTES,
    renderError: renderAgentAuthError,
    operation: {
      ...operation(
        "agentAuthAuthorizeExecution",
        "A partner's location asks whether an agent may execute its capability (section 5.11)",
        [{ partnerKey: [] }],
      ),
      description:
        "AgentPass's own endpoint, for the location a capability names: `Authorization: Bearer <partner key>` (401 `partner_key_invalid`, 403 `partner_key_revoked`). The agent JWT's `aud` must be the capability's location exactly, and its `jti` is spent. A refusal is section 5.11's (`capability_not_found`, `invalid_jwt`, `agent_revoked`, `capability_not_granted`, `invalid_request`, `constraint_violated` with `violations`): the location answers it as its own. A success names the person and the agent; the location then executes.",
    },
    admit: bearerOf,
    input: {
      body: z.object({
        token: z.string().min(1).max(8192),
        capability: z.string().min(1).max(200),
        arguments: z.record(z.string(), z.unknown()).optional(),
      }),
    },
    refuseInput: refuseAgentAuthInput,
    async handle(call, { admitted, body }) {
      const partner = await judgePartnerCaller(ctx, call, admitted, limits.badKeysPerIp);
      if (!("partnerId" in partner)) return partner;
      const args = body.arguments ?? {};
      const verdict = await authorizeExecution(
        ctx,
        partner.partnerId,
        body.token,
        body.capability,
        args,
      );
      if (!verdict.ok) return refused(verdict);
      const { agent } = verdict;
      ctx.usage.record(partner.partnerId, "success", partner.now, verdict.accountId, agent.id);
      return ok({
        agent_id: agent.id,
        agent_name: agent.name,
        host_id: agent.hostId,
        user_id: verdict.accountId,
        email: verdict.email,
        capability: body.capability,
        ...(verdict.constraints && { constraints: verdict.constraints }),
      });
    },
  });

  const Declared = z.object({
    name: z.string().min(1).max(64),
    description: z.string().min(1).max(500),
    location: z.string().min(1).max(2048),
    input: z.record(z.string(), z.unknown()).optional(),
    output: z.record(z.string(), z.unknown()).optional(),
  });
  const shown = (capability: CapabilityRecord) => ({
    name: capability.name,
    description: capability.description,
    location: capability.location,
    ...(capability.input && { input: capability.input }),
    ...(capability.output && { output: capability.output }),
  });
  const partnerOperation = (operationId: string, summary: string) => ({
    ...operation(operationId, summary, [{ partnerKey: [] }]),
    description:
      "`Authorization: Bearer <partner key>` (401 `partner_key_invalid`, 403 `partner_key_revoked`). A location must be at one of the partner's resource URLs (by origin): agents sign their JWTs for it exactly. Input and output are JSON Schemas (input an object's); `pattern` is not supported.",
  });

  const ownCapabilities = defineEndpoint({
    method: "GET",
    path: "/partner/capabilities",
    renderError: renderAgentAuthError,
    operation: partnerOperation("partnerCapabilities", "The capabilities a partner offers agents"),
    admit: bearerOf,
    async handle(call, { admitted }) {
      const partner = await judgePartnerCaller(ctx, call, admitted, limits.badKeysPerIp);
      if (!("partnerId" in partner)) return partner;
      return ok({ capabilities: (await ctx.capabilities.ofPartner(partner.partnerId)).map(shown) });
    },
  });

  const declare = defineEndpoint({
    method: "PUT",
    path: "/partner/capabilities",
    maxBodyBytes: MAX_DECLARATION_BYTES,
    renderError: renderAgentAuthError,
    operation: partnerOperation(
      "declarePartnerCapabilities",
      "A partner declares the whole of what it offers agents; capabilities left out are withdrawn",
    ),
    admit: bearerOf,
    input: { body: z.object({ capabilities: z.array(Declared).max(50) }) },
    refuseInput: refuseAgentAuthInput,
    async handle(call, { admitted, body }) {
      const partner = await judgePartnerCaller(ctx, call, admitted, limits.badKeysPerIp);
      if (!("partnerId" in partner)) return partner;
      const declared = await declareCapabilities(ctx, partner.partnerId, body.capabilities);
      if (!declared.ok) {
        return refused(refusal(400, "invalid_capabilities", declared.message));
      }
      return ok({ capabilities: declared.capabilities.map(shown) });
    },
  });

  return [list, describe, request, authorize, ownCapabilities, declare];
}
