import { printable } from "./terminal-text.ts";

/** The OAuth client id AgentPass pre-registers for this CLI (a public client: no secret). */
export const CLIENT_ID = "agentpass-cli";

const TIMEOUT_MS = 10_000;

export interface ServiceAnswer {
  status: number;
  /** The Retry-After header of a 429, when there is one. */
  retryAfter: string | null;
  /** The DPoP-Nonce header (RFC 9449 section 8), which a `use_dpop_nonce` refusal carries. */
  dpopNonce: string | null;
  /** The JSON object answered, or `{}` when the answer was not one. */
  body: Record<string, unknown>;
}

/**
 * `POST <url><path>`: form-encoded for the OAuth endpoints, or JSON with the user key as Bearer
 * for `/api/session-tokens`; with a `DPoP` proof header when `dpop` is given. Null when the
 * service cannot be reached in time: each caller decides what that means (a failed command, or
 * a key left live to report).
 */
export async function postToService(
  url: string,
  path: string,
  request: ({ form: Record<string, string> } | { json: unknown; bearer: string }) & {
    dpop?: string;
  },
): Promise<ServiceAnswer | null> {
  const headers: Record<string, string> =
    "form" in request
      ? { "content-type": "application/x-www-form-urlencoded" }
      : { authorization: `Bearer ${request.bearer}`, "content-type": "application/json" };
  if (request.dpop !== undefined) headers.dpop = request.dpop;
  try {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers,
      body:
        "form" in request
          ? new URLSearchParams(request.form).toString()
          : JSON.stringify(request.json),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const body: unknown = await response.json().catch(() => ({}));
    return {
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      dpopNonce: response.headers.get("dpop-nonce"),
      body: typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {},
    };
  } catch {
    return null;
  }
}

/** Why the server refused, for the person: its description, else its error code, else the status. */
export function reasonOf(answer: ServiceAnswer): string {
  const { error, error_description: description } = answer.body;
  const text = typeof description === "string" ? description : error;
  return typeof text === "string" ? printable(text, 200) : `HTTP ${answer.status}`;
}

/** The seconds a 429 asks to wait, as its Retry-After says them; "a few" without a number. */
export function retryWait(answer: ServiceAnswer): string {
  return answer.retryAfter && /^\d{1,6}$/.test(answer.retryAfter) ? answer.retryAfter : "a few";
}
