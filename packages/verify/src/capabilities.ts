import { postToAgentPass, type ServiceCall } from "./post-to-agentpass.ts";
import type { Agent } from "./result.ts";

/**
 * A capability your service offers agents (Agent Auth Protocol section 2.12), executed at
 * `location`, a URL at one of your resource URLs: agents sign their JWTs for it exactly.
 */
export interface Capability {
  /** `[a-z0-9_]`, 1 to 64 characters; yours alone across AgentPass. */
  name: string;
  description: string;
  location: string;
  /** JSON Schema of the arguments, an object's (`pattern` is not supported). */
  input?: Record<string, unknown>;
  output?: Record<string, unknown>;
}

/**
 * Whether an agent may execute your capability with these arguments, as AgentPass judged it.
 * A refusal is section 5.11's: answer `status` with `{ error, message, violations? }` as your
 * own (`body` is that answer). AgentPass unreachable, or your key refused, is 503
 * `temporarily_unavailable`: no verdict on the agent.
 */
export type AuthorizeResult =
  | {
      ok: true;
      /** The person the agent acts for. */
      email: string;
      agent: Agent;
      capability: string;
      /** The grant's constraints, already enforced: for your records. */
      constraints?: Record<string, unknown>;
    }
  | {
      ok: false;
      status: number;
      error: string;
      message: string;
      body: Record<string, unknown>;
    };

export type DeclareResult =
  | { ok: true; capabilities: Capability[] }
  | { ok: false; status: number; error: string; message: string };

const UNAVAILABLE = {
  ok: false as const,
  status: 503,
  error: "temporarily_unavailable",
  message: "AgentPass could not be asked",
};
/** AgentPass's refusals of the partner itself: no verdict on the agent, so never the agent's. */
const PARTNER_REFUSALS = new Set(["partner_key_invalid", "partner_key_revoked", "rate_limited"]);

/** Asks AgentPass whether the agent's JWT may execute `capability` with `args`; never throws. */
export async function callAuthorize(
  call: ServiceCall,
  token: unknown,
  capability: unknown,
  args: unknown,
): Promise<AuthorizeResult> {
  if (typeof token !== "string" || token === "") {
    return refusal(401, "invalid_jwt", "Send an agent JWT as Authorization: Bearer");
  }
  if (typeof capability !== "string" || capability === "") {
    return refusal(400, "invalid_request", "capability must be a capability's name");
  }
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
    return refusal(400, "invalid_request", "arguments must be an object");
  }
  const data = JSON.stringify({
    token,
    capability,
    ...(args !== undefined && { arguments: args }),
  });
  const answer = await postToAgentPass(call, { type: "application/json", data });
  const body = answer?.body;
  if (!answer || !body) return { ...UNAVAILABLE, body: bodyOf(UNAVAILABLE) };
  if (
    answer.status === 200 &&
    typeof body.email === "string" &&
    typeof body.agent_id === "string"
  ) {
    return {
      ok: true,
      email: body.email,
      agent: { id: body.agent_id, name: String(body.agent_name ?? "") },
      capability,
      ...(isRecord(body.constraints) && { constraints: body.constraints }),
    };
  }
  const error = body.error;
  if (answer.status >= 400 && answer.status < 500 && typeof error === "string") {
    if (PARTNER_REFUSALS.has(error)) {
      const refused = { ...UNAVAILABLE, message: `AgentPass refused your partner key: ${error}` };
      return { ...refused, body: bodyOf(UNAVAILABLE) };
    }
    return { ok: false, status: answer.status, error, message: String(body.message ?? ""), body };
  }
  return { ...UNAVAILABLE, body: bodyOf(UNAVAILABLE) };
}

/** Makes `capabilities` the whole of what you offer agents; never throws. */
export async function callDeclare(
  call: ServiceCall,
  capabilities: Capability[],
): Promise<DeclareResult> {
  const data = JSON.stringify({ capabilities });
  const answer = await postToAgentPass(
    { ...call, method: "PUT" },
    { type: "application/json", data },
  );
  const body = answer?.body;
  if (answer?.status === 200 && body && Array.isArray(body.capabilities)) {
    return { ok: true, capabilities: body.capabilities as Capability[] };
  }
  if (!answer || !body || typeof body.error !== "string") return UNAVAILABLE;
  return {
    ok: false,
    status: answer.status,
    error: body.error,
    message: String(body.message ?? ""),
  };
}

function refusal(status: number, error: string, message: string): AuthorizeResult {
  return { ok: false, status, error, message, body: { error, message } };
}

function bodyOf(answer: { error: string; message: string }) {
  return { error: answer.error, message: answer.message };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
