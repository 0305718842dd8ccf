import { postToAgentPass, type ServiceCall } from "./post-to-agentpass.ts";
import type { RequestProof } from "./request-proof.ts";
import { LOCAL_CODES, NETWORK_ERROR } from "./result.ts";

/**
 * What an introspection tells a partner (RFC 7662, answered by AgentPass). `ok` only for an
 * active token; every token AgentPass will not vouch for to you (bad, expired, or bound to
 * another partner) is `code: "token_inactive"`; a token bound to a key, asked about with a
 * `dpop`, whose proof is missing or fails a check is `code: "session_token_proof_required"` or
 * `"session_token_proof_invalid"` (`error` saying which check); any other failure carries the
 * service's own `code` or one of `LOCAL_CODES`: switch on `code`, never on `error`, which is for
 * people.
 *
 * @example
 * const result = await introspect(token, { partnerKey });
 * if (result.ok && result.aud) console.log(`${result.email}, with a token bound to us`);
 * else if (!result.ok && result.code === "token_inactive") answer401();
 * else if (!result.ok && result.code.startsWith("session_token_proof_")) answer401(result.error);
 * else if (!result.ok) answer503(); // network_error, partner_key_*, rate_limited, …
 */
export type IntrospectResult =
  | {
      ok: true;
      status: 200;
      /** The person's verified email, in canonical form. */
      email: string;
      /** The person's AgentPass account id. */
      sub: string;
      /**
       * The partner id the token is bound to, which is always yours (a token bound to another
       * partner is inactive to you); absent for a token any partner may verify.
       */
      aud?: string;
      /** Which client the token was issued to, when AgentPass says. */
      clientId?: string;
      /** The AgentPass instance that issued the token. */
      issuer?: string;
      issuedAt?: Date;
      expiresAt?: Date;
      /**
       * The RFC 7638 thumbprint of the key the token is bound to (`cnf.jkt`), for a partner that
       * checks DPoP proofs itself; absent for an unbound token.
       */
      jkt?: string;
    }
  | { ok: false; status: number; error: string; code: string };

/** The code of a token AgentPass does not vouch for to the caller (`{"active": false}`). */
export const TOKEN_INACTIVE = "token_inactive";

const INACTIVE = {
  ok: false,
  status: 200,
  error: "Token is not active",
  code: TOKEN_INACTIVE,
} as const;

interface IntrospectCall extends ServiceCall {
  token: string;
  dpop?: RequestProof | undefined;
}

/**
 * One `POST /oauth/introspect`, mapped to a result. Never throws: a failure to connect or a
 * timeout is the network error; an error answer passes its code through, whether AgentPass's
 * own (`{ error, code }`) or OAuth's (`{ error, error_description }`, `error` being the code).
 */
export async function callIntrospect(call: IntrospectCall): Promise<IntrospectResult> {
  const answer = await postToAgentPass(call, {
    type: "application/x-www-form-urlencoded",
    data: introspectionForm(call.token, call.dpop),
  });
  if (!answer)
    return { ok: false, error: NETWORK_ERROR, status: 0, code: LOCAL_CODES.networkError };
  const { status, body } = answer;
  if (status === 200 && body?.active === false) {
    return nonEmpty(body.dpop_error) ? proofRefusalOf(body.dpop_error, body) : INACTIVE;
  }
  if (status === 200 && body?.active === true && nonEmpty(body.email) && nonEmpty(body.sub)) {
    return activeResult(body, body.email, body.sub);
  }
  if (status !== 200 && typeof body?.error === "string") return refusalOf(status, body);
  return {
    ok: false,
    error: `Unexpected response from AgentPass (HTTP ${status})`,
    status,
    code: LOCAL_CODES.unexpectedResponse,
  };
}

/**
 * The form: the token and, with a `dpop`, AgentPass's extension parameters, by which it checks the
 * proof of a bound token as `/api/verify` does (`dpop_method` alone: the request had no proof).
 */
function introspectionForm(token: string, dpop: RequestProof | undefined): string {
  const form = new URLSearchParams({ token });
  if (dpop) {
    form.set("dpop_method", dpop.method);
    form.set("dpop_url", dpop.url);
    if (dpop.proof !== undefined) form.set("dpop_proof", dpop.proof);
  }
  return form.toString();
}

/** `{"active": false, "dpop_error": …}`: the token is bound and its proof missing or refused. */
function proofRefusalOf(code: string, body: Record<string, unknown>): IntrospectResult {
  const error = nonEmpty(body.dpop_error_description) ? body.dpop_error_description : code;
  return { ok: false, status: 200, error, code };
}

function activeResult(body: Record<string, unknown>, email: string, sub: string): IntrospectResult {
  const result: IntrospectResult = { ok: true, status: 200, email, sub };
  if (nonEmpty(body.aud)) result.aud = body.aud;
  if (nonEmpty(body.client_id)) result.clientId = body.client_id;
  if (nonEmpty(body.iss)) result.issuer = body.iss;
  const issuedAt = secondsToDate(body.iat);
  if (issuedAt) result.issuedAt = issuedAt;
  const expiresAt = secondsToDate(body.exp);
  if (expiresAt) result.expiresAt = expiresAt;
  const confirmation = body.cnf as { jkt?: unknown } | null | undefined;
  if (nonEmpty(confirmation?.jkt)) result.jkt = confirmation.jkt;
  return result;
}

function refusalOf(status: number, body: Record<string, unknown>): IntrospectResult {
  const error = body.error as string;
  if (typeof body.code === "string") return { ok: false, error, status, code: body.code };
  // An OAuth error answer: `error` is the code, `error_description` the text for people.
  const description = nonEmpty(body.error_description) ? body.error_description : error;
  return { ok: false, error: description, status, code: error };
}

function nonEmpty(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

/** A NumericDate (RFC 7519: seconds since the epoch) as a Date, or null when it is not one. */
function secondsToDate(value: unknown): Date | null {
  if (typeof value !== "number" || !Number.isFinite(value)) return null;
  const date = new Date(value * 1000);
  return Number.isNaN(date.getTime()) ? null : date;
}
