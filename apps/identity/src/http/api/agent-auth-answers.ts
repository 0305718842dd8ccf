import {
  type Answer,
  type ApiCall,
  type InputFailure,
  type PlainAnswer,
  readBearer,
} from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { type AgentAuthRefusal, refusal } from "../../domain/agents.ts";
import { judgePartnerKey } from "../../domain/session-tokens.ts";
import { type RateLimiter, rateLimitHeaders } from "../../infra/rate-limit.ts";

/**
 * The answers of the Agent Auth Protocol's endpoints (`agent-auth.ts`, `agent-capabilities.ts`)
 * in the protocol's own form: an error is `{ error, message }` (section 5.13), never the rest of
 * the API's `{ error, code }`; nothing is stored by a cache.
 */

/** Bodies of these endpoints are small: a name, a key, an id, a capability's arguments. */
export const MAX_BODY_BYTES = 16 * 1024;
export const NO_STORE = { "Cache-Control": "no-store" };

const ErrorBody = z.object({
  error: z.string().meta({ description: "Machine code (section 5.13)", example: "invalid_jwt" }),
  message: z.string().meta({ description: "For people", example: "Invalid JWT: …" }),
});
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: ErrorBody } },
});
const REFUSALS = {
  "400": errorResponse("invalid_request, unsupported_mode, unsupported_algorithm, …"),
  "401": errorResponse("invalid_jwt: the host's JWT is missing, invalid, expired or used"),
  "403": errorResponse("host_revoked, host_pending, agent_revoked, …"),
  "404": errorResponse("agent_not_found, capability_not_found"),
  "409": errorResponse("agent_exists, host_exists: the key is registered already"),
  "413": errorResponse("invalid_request: the body is over the endpoint's limit"),
  "429": errorResponse("rate_limited: too many registrations, or unknown partner keys"),
};
const Status = z.object({}).passthrough().meta({ description: "The protocol's answer" });

/** An operation of the protocol's, in its document: its answers, its refusals, its security. */
export function operation(
  operationId: string,
  summary: string,
  security: Record<string, string[]>[] = [{ hostJwt: [] }],
  description?: string,
) {
  return {
    operationId,
    summary,
    ...(description && { description }),
    tags: ["Agent Auth"],
    security,
    responses: {
      "200": {
        description: "The answer the protocol gives",
        content: { "application/json": { schema: Status } },
      },
      ...REFUSALS,
    },
  };
}

/** The bearer token, whatever it is: the handler judges it, so a missing one is its 401 too. */
export function bearerOf(request: ApiCall) {
  const bearer = readBearer(request.header("authorization"));
  return { ok: true as const, admitted: bearer.kind === "present" ? bearer.value : undefined };
}

export function ok(body: object): Answer {
  return { status: 200, headers: NO_STORE, body };
}

export function refused(refusal: AgentAuthRefusal): Answer {
  const { ok: _ok, status, ...body } = refusal;
  return {
    status,
    headers: {
      ...NO_STORE,
      ...(status === 401 && {
        "WWW-Authenticate": 'Bearer realm="agentpass", error="invalid_token"',
      }),
    },
    body,
  };
}

export function refuseAgentAuthInput(failure: InputFailure): Answer {
  const message =
    failure.problem === "schema"
      ? `Invalid ${failure.part}: ${failure.error.issues
          .map((issue) => `${issue.path.join(".") || failure.part} ${issue.message}`)
          .join("; ")}`
      : "The body must be a JSON object";
  return { status: 400, headers: NO_STORE, body: { error: "invalid_request", message } };
}

/** What the router answers for these endpoints (a body too large, a fault) in their format. */
export function renderAgentAuthError(answer: PlainAnswer): Answer {
  const error =
    answer.status === 413 || answer.status < 500
      ? answer.status === 429
        ? "rate_limited"
        : "invalid_request"
      : answer.status === 503
        ? "temporarily_unavailable"
        : "internal_error";
  const requestId = answer.body.requestId;
  const message = String(answer.body.error ?? "Request refused");
  return {
    status: answer.status,
    headers: answer.headers,
    body: { error, message: typeof requestId === "string" ? `${message} (${requestId})` : message },
  };
}

/**
 * The partner whose key a partner's call carries, or the protocol's refusal: 401
 * `partner_key_invalid` for a missing or unknown key, 403 `partner_key_revoked` for a revoked
 * one (or a suspended partner), as `/api/verify` tells them apart. Unknown keys are counted per
 * address: past `badKeys`, 429.
 */
export async function judgePartnerCaller(
  ctx: IdentityContext,
  request: ApiCall,
  key: string | undefined,
  badKeys: RateLimiter,
): Promise<{ partnerId: string; now: number } | Answer> {
  const partner = key ? await judgePartnerKey(ctx, key) : null;
  if (partner?.ok) return partner;
  const counted = await badKeys.take(request.clientIp());
  if (!counted.ok) {
    return {
      status: 429,
      headers: rateLimitHeaders(counted),
      body: { error: "rate_limited", message: "Too many unknown partner keys" },
    };
  }
  return partner?.code === "REVOKED_PARTNER_KEY"
    ? refused(refusal(403, "partner_key_revoked", "Partner key has been revoked"))
    : refused(refusal(401, "partner_key_invalid", "Invalid partner key"));
}
