import { callVerify } from "./call-verify.ts";
import { readEnvironment } from "./environment.ts";
import { requestProofOf, type VerifyContext } from "./request-proof.ts";
import { DEFAULT_TIMEOUT_MS, LOCAL_CODES, type VerifyResult } from "./result.ts";

/** A setup refused before any request: no URL, a malformed one, or no usable partner key. */
export type SetupFailure = { ok: false; error: string; status: number; code: string };

const MISSING_API_URL: SetupFailure = {
  ok: false,
  error: "No AgentPass URL: pass apiUrl or set AGENTPASS_URL",
  status: 0,
  code: LOCAL_CODES.apiUrlMissing,
};

const INVALID_API_URL: SetupFailure = {
  ok: false,
  error: "Invalid apiUrl: expected an http(s) URL",
  status: 0,
  code: LOCAL_CODES.invalidApiUrl,
};

/**
 * Asks AgentPass who a session token belongs to. Never throws, whatever the arguments.
 *
 * @param partnerKey - your partner key (`apk_…`), sent as a Bearer credential
 * @param sessionToken - the token the agent sent you
 * @param apiUrl - the AgentPass URL; defaults to the `AGENTPASS_URL` environment variable. There
 *   is no built-in service: with neither, the result is `code: "api_url_missing"` and nothing is
 *   sent.
 * @param context - optionally `dpop`: the DPoP proof the request came with, and its method and
 *   URL, for a token bound to the agent's key (never cached: each proof is accepted once); and
 *   your request's id and trace (`requestId`, `traceparent`), for AgentPass's log
 * @returns `{ ok: true, email }`, or `{ ok: false, error }` with the service's message, or
 *   `"Network error: cannot reach API"` when the service could not be reached. `status` is the
 *   HTTP status (0 when no answer came back). A bound token without its proof is
 *   `code: "session_token_proof_required"`, with a proof that fails a check
 *   `code: "session_token_proof_invalid"` (both 401, `error` saying which check).
 *
 * @example
 * import { verify } from "@agentpass/verify";
 * const result = await verify(process.env.AGENTPASS_PARTNER_KEY, req.headers["x-session-token"]);
 * if (!result.ok) return res.status(401).json({ error: result.error });
 * const user = await db.users.findByEmail(result.email);
 */
export function verify(
  partnerKey: unknown,
  sessionToken: unknown,
  apiUrl?: unknown,
  context?: VerifyContext,
): Promise<VerifyResult> {
  const endpoint = verifyEndpoint(apiUrl);
  const invalid = checkArguments(partnerKey, sessionToken, endpoint);
  if (invalid) return Promise.resolve(invalid);
  const proof = requestProofOf(context);
  if (!proof.ok) return Promise.resolve(proof);
  return callVerify({
    endpoint: endpoint as string,
    partnerKey: partnerKey as string,
    sessionToken: sessionToken as string,
    dpop: proof.dpop,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    fetch: globalThis.fetch,
    context,
  });
}

/** `<apiUrl>/api/verify`, or why there is none. */
function verifyEndpoint(apiUrl: unknown): string | SetupFailure {
  return serviceEndpoint(apiUrl, "/api/verify");
}

/**
 * The AgentPass URL to use: `apiUrl`, else `AGENTPASS_URL`, normalized to origin and path without
 * a trailing slash; or why there is none. Never a built-in URL: a default this project does not
 * control would receive partner keys and tokens from every partner who forgot to set one.
 */
export function serviceBase(apiUrl: unknown): string | SetupFailure {
  const base =
    apiUrl === undefined || apiUrl === null || apiUrl === ""
      ? readEnvironment("AGENTPASS_URL")
      : apiUrl;
  if (base === undefined) return MISSING_API_URL;
  if (typeof base !== "string") return INVALID_API_URL;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return INVALID_API_URL;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return INVALID_API_URL;
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** `<base><path>` of the AgentPass URL to use, or why there is none. */
export function serviceEndpoint(apiUrl: unknown, path: string): string | SetupFailure {
  const base = serviceBase(apiUrl);
  return typeof base === "string" ? `${base}${path}` : base;
}

/**
 * Refuses, without a request, what the service would refuse anyway — with the service's own
 * messages and statuses — and a missing or malformed `apiUrl`.
 */
export function checkArguments(
  partnerKey: unknown,
  sessionToken: unknown,
  endpoint: string | SetupFailure,
): VerifyResult | null {
  const setup = checkSetup(partnerKey, endpoint);
  if (setup) return setup;
  if (typeof sessionToken !== "string" || sessionToken === "") {
    return {
      ok: false,
      error: "Missing or invalid sessionToken",
      status: 400,
      code: "session_token_field_invalid",
    };
  }
  return null;
}

/** Refuses, without a request, a missing or malformed `apiUrl` and a partner key the service would refuse. */
export function checkSetup(
  partnerKey: unknown,
  endpoint: string | SetupFailure,
): SetupFailure | null {
  if (typeof endpoint !== "string") return endpoint;
  if (typeof partnerKey !== "string" || partnerKey.trim() === "") {
    return { ok: false, error: "Missing partner key", status: 401, code: "partner_key_missing" };
  }
  if (/[\r\n\0]/.test(partnerKey)) {
    return { ok: false, error: "Invalid partner key", status: 401, code: "partner_key_invalid" };
  }
  return null;
}
