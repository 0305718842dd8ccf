import { postToAgentPass, type ServiceCall } from "./post-to-agentpass.ts";
import type { RequestProof } from "./request-proof.ts";
import {
  type Agent,
  LOCAL_CODES,
  NETWORK_ERROR,
  TOKEN_EXPIRES_HEADER,
  type VerifyResult,
} from "./result.ts";

interface CallOptions extends ServiceCall {
  sessionToken: string;
  dpop?: RequestProof | undefined;
}

/**
 * One `POST /api/verify`, mapped to a result. Never throws: a failure to connect or a timeout
 * is the network error; an error answer passes its `error` and `code` through unchanged.
 */
export async function callVerify(options: CallOptions): Promise<VerifyResult> {
  const answer = await postToAgentPass(options, {
    type: "application/json",
    data: JSON.stringify({ sessionToken: options.sessionToken, dpop: dpopField(options.dpop) }),
  });
  if (!answer)
    return { ok: false, error: NETWORK_ERROR, status: 0, code: LOCAL_CODES.networkError };
  const { status, body } = answer;
  if (status === 200 && typeof body?.email === "string" && body.email !== "") {
    const expiresAt = parseDate(answer.headers.get(TOKEN_EXPIRES_HEADER));
    const agent = agentOf(body.agent);
    return {
      ok: true,
      email: body.email,
      status: 200,
      ...(expiresAt && { expiresAt }),
      ...(agent && { agent }),
    };
  }
  if (status !== 200 && typeof body?.error === "string") {
    const code = typeof body.code === "string" ? body.code : LOCAL_CODES.unexpectedResponse;
    return { ok: false, error: body.error, status, code };
  }
  return {
    ok: false,
    error: `Unexpected response from AgentPass (HTTP ${status})`,
    status,
    code: LOCAL_CODES.unexpectedResponse,
  };
}

/**
 * The body's `dpop`: the proof with its request's method and URL; none without a proof, which
 * AgentPass takes as a request that had none (a bound token is then refused).
 */
function dpopField(dpop: RequestProof | undefined) {
  if (dpop?.proof === undefined) return undefined;
  return { proof: dpop.proof, method: dpop.method, url: dpop.url };
}

/** The answer's `agent`, when it is one: an id and a name, both strings. */
function agentOf(value: unknown): Agent | null {
  if (typeof value !== "object" || value === null) return null;
  const { id, name } = value as Record<string, unknown>;
  return typeof id === "string" && typeof name === "string" ? { id, name } : null;
}

function parseDate(value: string | null): Date | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}
