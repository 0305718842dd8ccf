import { callVerify } from "./call-verify.ts";
import { DEFAULT_API_URL, DEFAULT_TIMEOUT_MS, LOCAL_CODES, type VerifyResult } from "./result.ts";

/**
 * Asks AgentPass who a session token belongs to. Never throws, whatever the arguments.
 *
 * @param partnerKey - your partner key (`apk_…`), sent as a Bearer credential
 * @param sessionToken - the token the agent sent you
 * @param apiUrl - the AgentPass URL; defaults to {@link DEFAULT_API_URL}
 * @returns `{ ok: true, email }`, or `{ ok: false, error }` with the service's message, or
 *   `"Network error: cannot reach API"` when the service could not be reached. `status` is the
 *   HTTP status (0 when no answer came back).
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
): Promise<VerifyResult> {
  const endpoint = verifyEndpoint(apiUrl);
  const invalid = checkArguments(partnerKey, sessionToken, endpoint);
  if (invalid) return Promise.resolve(invalid);
  return callVerify({
    endpoint: endpoint as string,
    partnerKey: partnerKey as string,
    sessionToken: sessionToken as string,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    fetch: globalThis.fetch,
  });
}

/** `<apiUrl>/api/verify`, or null when `apiUrl` is not an http(s) URL. */
export function verifyEndpoint(apiUrl: unknown): string | null {
  return serviceEndpoint(apiUrl, "/api/verify");
}

/** `<apiUrl><path>` (`apiUrl` defaulting to the public service), or null when it is not http(s). */
export function serviceEndpoint(apiUrl: unknown, path: string): string | null {
  const base = apiUrl === undefined || apiUrl === null ? DEFAULT_API_URL : apiUrl;
  if (typeof base !== "string") return null;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return null;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}${path}`;
}

/**
 * Refuses, without a request, what the service would refuse anyway — with the service's own
 * messages and statuses — and a malformed `apiUrl`.
 */
export function checkArguments(
  partnerKey: unknown,
  sessionToken: unknown,
  endpoint: string | null,
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

/** Refuses, without a request, a malformed `apiUrl` and a partner key the service would refuse. */
export function checkSetup(
  partnerKey: unknown,
  endpoint: string | null,
): { ok: false; error: string; status: number; code: string } | null {
  if (endpoint === null) {
    return {
      ok: false,
      error: "Invalid apiUrl: expected an http(s) URL",
      status: 0,
      code: LOCAL_CODES.invalidApiUrl,
    };
  }
  if (typeof partnerKey !== "string" || partnerKey.trim() === "") {
    return { ok: false, error: "Missing partner key", status: 401, code: "partner_key_missing" };
  }
  if (/[\r\n\0]/.test(partnerKey)) {
    return { ok: false, error: "Invalid partner key", status: 401, code: "partner_key_invalid" };
  }
  return null;
}
