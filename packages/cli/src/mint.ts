import { CliError, EXIT } from "./exit-codes.ts";

export interface MintedToken {
  sessionToken: string;
  expiresAt: string;
}

const TIMEOUT_MS = 10_000;
const USER_KEY = /^apu_[0-9A-Za-z]{38}$/;

/** Whether `key` has the shape of a user key. The server checks the rest. */
export function looksLikeUserKey(key: string): boolean {
  return USER_KEY.test(key);
}

/** `POST <url>/api/session-tokens` with the user key; failures become CliErrors. */
export async function mintSessionToken(
  url: string,
  userKey: string,
  audience: string | undefined,
): Promise<MintedToken> {
  let response: Response;
  let body: { sessionToken?: unknown; expiresAt?: unknown; error?: unknown };
  try {
    response = await fetch(`${url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}`, "content-type": "application/json" },
      body: JSON.stringify(audience ? { audience } : {}),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    body = (await response.json().catch(() => ({}))) as typeof body;
  } catch {
    throw new CliError(EXIT.UNREACHABLE, `Cannot reach AgentPass at ${url}`);
  }
  if (response.status === 201 && typeof body.sessionToken === "string") {
    return { sessionToken: body.sessionToken, expiresAt: String(body.expiresAt) };
  }
  const reason = typeof body.error === "string" ? body.error : `HTTP ${response.status}`;
  if (response.status === 401 || response.status === 403) {
    throw new CliError(
      EXIT.KEY_REJECTED,
      `Your user key was rejected (${reason}). Log in again with: agentpass login`,
    );
  }
  if (response.status === 429) {
    const wait = response.headers.get("retry-after") ?? "a few";
    throw new CliError(
      EXIT.ERROR,
      `Too many tokens minted with this key; try again in ${wait} seconds (or reuse: agentpass token)`,
    );
  }
  throw new CliError(EXIT.ERROR, `AgentPass could not mint a token: ${reason}`);
}
