import type { Needs } from "../context.ts";
import { keyedHash, randomSecret, randomString, sha256 } from "../infra/crypto.ts";
import { createGrant } from "./grants.ts";

/** RFC 8628 device authorization: the CLI shows a code, the person approves it in a browser. */
const DEVICE_CODE_LIFETIME_S = 600;
const POLL_INTERVAL_S = 5;
// No vowels or look-alikes: codes are read aloud and typed (RFC 8628 section 6.1).
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";

/**
 * What a device may call itself on the approval page: no control, format (bidi overrides,
 * zero-width) or blank-looking characters, one space between words, at most 100 characters.
 * It is still the device's own word, and the page says so.
 */
export function displayableClientName(name: string): string {
  const shown = name
    .replace(/[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0\u2800]/gu, "")
    .replace(/\s+/gu, " ")
    .trim()
    .slice(0, 100);
  return shown || "CLI login";
}

/** Starts a device login; `clientAddress` is where the request came from, shown to the approver. */
export async function startDeviceLogin(
  ctx: Needs<"web" | "clock" | "keys">,
  clientName: string,
  clientAddress: string,
) {
  const { deviceCode, userCode, row } = drawDeviceCode(ctx, clientName, clientAddress, null);
  await ctx.web.insertDeviceCode(row);
  return { deviceCode, userCode, expiresIn: DEVICE_CODE_LIFETIME_S, interval: POLL_INTERVAL_S };
}

/**
 * A new device code's row, and the codes it hides: the device code (only its hash is kept) and
 * the user code (only its keyed hash). `agentId`: a code that approves an agent's registration
 * (`domain/agents.ts`), whose device code is never handed out, so no login poll redeems it.
 */
export function drawDeviceCode(
  ctx: Needs<"clock" | "keys">,
  clientName: string,
  clientAddress: string,
  agentId: string | null,
) {
  const deviceCode = randomSecret();
  const drawn = randomString(USER_CODE_ALPHABET, 8);
  const userCode = `${drawn.slice(0, 4)}-${drawn.slice(4)}`;
  const now = ctx.clock();
  const deviceHash = sha256(deviceCode);
  const row = {
    device_hash: deviceHash,
    // Not the code: whoever reads the row could approve it. See `IdentityDatabase`.
    user_code: deviceHash,
    user_code_hash: hashUserCode(ctx, userCode),
    client_name: displayableClientName(clientName),
    client_address: clientAddress,
    status: "pending" as const,
    account_id: null,
    created_at: now,
    expires_at: now + DEVICE_CODE_LIFETIME_S * 1000,
    last_polled_at: null,
    agent_id: agentId,
  };
  return { deviceCode, userCode, row };
}

/** How long a device code lasts, and how often its device may poll, in seconds. */
export const DEVICE_CODE_TIMES = { expiresIn: DEVICE_CODE_LIFETIME_S, interval: POLL_INTERVAL_S };

/**
 * What is stored for a user code: 20^8 codes are few enough to try every one against a plain
 * hash, so the hash is keyed with a key that is not in the database.
 */
export function hashUserCode(ctx: Needs<"keys">, userCode: string): string {
  return keyedHash(ctx.keys.shortCodes, userCode);
}

/** Normalizes what a person types: case, spaces and the dash do not matter. */
export function normalizeUserCode(input: string): string {
  const letters = input.toUpperCase().replace(/[^A-Z]/g, "");
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : "";
}

export interface PendingDeviceLogin {
  /** The code as the person typed it, normalized: the database does not have it. */
  userCode: string;
  /** What the device called itself: unverified. */
  clientName: string;
  /** Epoch ms. */
  startedAt: number;
  /** The address the login was started from (IPv6 as its /48), or null if unrecorded. */
  startedFrom: string | null;
  deviceHash: string;
}

/** The pending request a person is about to approve, or null. */
export async function findPendingDeviceLogin(
  ctx: Needs<"web" | "clock" | "keys">,
  userCode: string,
): Promise<PendingDeviceLogin | null> {
  const typed = normalizeUserCode(userCode);
  if (typed === "") return null;
  const code = await ctx.web.findDeviceCodeByUserCodeHash(hashUserCode(ctx, typed));
  if (code?.status !== "pending" || code.expires_at <= ctx.clock()) return null;
  // An agent's approval is decided as one (`domain/agents.ts`), never as a login.
  if (code.agent_id) return null;
  return {
    userCode: typed,
    clientName: displayableClientName(code.client_name),
    startedAt: code.created_at,
    startedFrom: code.client_address,
    deviceHash: code.device_hash,
  };
}

export async function decideDeviceLogin(
  ctx: Needs<"web" | "clock" | "keys">,
  userCode: string,
  accountId: string,
  approve: boolean,
): Promise<boolean> {
  const pending = await findPendingDeviceLogin(ctx, userCode);
  if (!pending) return false;
  return ctx.web.setDeviceStatus(
    pending.deviceHash,
    "pending",
    approve ? "approved" : "denied",
    accountId,
  );
}

/**
 * The network an address belongs to, as the approval page shows it and compares it: IPv4 /24,
 * IPv6 /48, and every loopback address one network, this machine. A login started on the same
 * machine must never look like one from elsewhere: the CLI reaches the service as `127.0.0.1`
 * while the browser reaches `localhost` as `::1`, and a warning shown on every local login
 * teaches people to click past the one that matters. Addresses come as the service records
 * them (`clientAddress()`; older rows, IPv6 as its /48 such as `0:0:0::/48`).
 */
export function networkOf(address: string): string {
  const text = address.trim().toLowerCase();
  const v4 = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.\d+$/.exec(text);
  if (v4?.[1] === "127") return LOOPBACK_NETWORK;
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  if (!text.includes(":")) return text;
  const [head = "", tail] = (text.split(/[/%]/)[0] ?? "").split("::");
  const groupsOf = (part: string) => (part ? part.split(":") : []);
  const left = groupsOf(head);
  const right = groupsOf(tail ?? "");
  const zeros: string[] = Array(Math.max(0, 8 - left.length - right.length)).fill("0");
  const groups = [...left, ...(tail === undefined ? [] : zeros), ...right];
  const prefix = groups.slice(0, 3).map((group) => Number.parseInt(group, 16) || 0);
  // ::/48 holds ::1 and nothing routable (global unicast is 2000::/3): recorded as its /48,
  // ::1 is `0:0:0::/48`, so that whole /48 is this machine.
  if (prefix.every((group) => group === 0)) return LOOPBACK_NETWORK;
  return `${prefix.map((group) => group.toString(16)).join(":")}::/48`;
}

/** The network of every loopback address, IPv4 or IPv6. */
export const LOOPBACK_NETWORK = "loopback: this machine";

/** Whether two recorded addresses are on one network as `networkOf` sees it. */
export function isSameNetwork(a: string, b: string): boolean {
  return networkOf(a) === networkOf(b);
}

/** What each refusal of a poll means, for the device's person (RFC 8628 section 3.5). */
export const POLL_ERROR_DESCRIPTIONS: Record<PollError, string> = {
  authorization_pending: "The person has not approved yet",
  slow_down: "Polling too fast: wait 5 more seconds between polls",
  access_denied: "The person denied the request",
  expired_token: "The code expired; start again",
  invalid_grant: "Unknown or already used device code",
};

type PollError = Extract<PollResult, { ok: false }>["error"];

type PollResult =
  | {
      ok: true;
      userKey: string;
      keyId: string;
      accountId: string;
      /** What the device called itself, the grant's name: for the audit log. */
      clientName: string;
    }
  | {
      ok: false;
      error:
        | "authorization_pending"
        | "slow_down"
        | "access_denied"
        | "expired_token"
        | "invalid_grant";
    };

/**
 * One poll of the CLI. Once approved, the login becomes a grant of `clientId` (the CLI, or
 * another device-flow client), named after the device, whose user key is handed over exactly
 * once: no secret waits in the database for the CLI to come.
 */
export async function pollDeviceLogin(
  ctx: Needs<"web" | "oauth" | "clock">,
  deviceCode: string,
  clientId: string,
  /** The thumbprint of the DPoP key of the poll's proof: the grant is bound to it. */
  dpopJkt: string | null = null,
): Promise<PollResult> {
  const deviceHash = sha256(deviceCode);
  const code = await ctx.web.findDeviceCode(deviceHash);
  const now = ctx.clock();
  if (!code || code.status === "consumed") return { ok: false, error: "invalid_grant" };
  if (code.expires_at <= now) return { ok: false, error: "expired_token" };
  if (code.status === "denied") return { ok: false, error: "access_denied" };
  if (!(await ctx.web.takeDevicePoll(deviceHash, now, POLL_INTERVAL_S * 1000))) {
    return { ok: false, error: "slow_down" };
  }
  if (code.status === "pending" || !code.account_id)
    return { ok: false, error: "authorization_pending" };
  if (!(await ctx.web.setDeviceStatus(deviceHash, "approved", "consumed", null))) {
    return { ok: false, error: "invalid_grant" };
  }
  // The device's name is its own word, whoever the client is.
  const clientName = displayableClientName(code.client_name);
  const grant = await createGrant(ctx, {
    accountId: code.account_id,
    client: { id: clientId, name: clientName, verified: false },
    audience: null,
    createdFrom: code.client_address,
    rotating: false,
    dpopJkt,
  });
  const { refreshToken: userKey, id: keyId } = grant;
  return { ok: true, userKey, keyId, accountId: code.account_id, clientName };
}

/**
 * Takes back what a poll gave when its answer never reached the device (the connection closed
 * first): the key is revoked and the login is approved again, so the next poll gets a new key.
 * The device code is spent only by an answer that was written.
 */
export async function undoDevicePoll(
  ctx: Needs<"store" | "web" | "clock">,
  deviceCode: string,
  given: { keyId: string; accountId: string },
): Promise<void> {
  await ctx.store.revokeKey("user_keys", given.keyId, ctx.clock());
  await ctx.web.setDeviceStatus(sha256(deviceCode), "consumed", "approved", given.accountId);
}
