import type { Needs } from "../context.ts";
import { randomSecret, randomString, sha256 } from "../infra/crypto.ts";
import { issueKey } from "./credentials.ts";

/** RFC 8628 device authorization: the CLI shows a code, the person approves it in a browser. */
export const DEVICE_CODE_LIFETIME_S = 600;
export const POLL_INTERVAL_S = 5;
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
  ctx: Needs<"web" | "clock">,
  clientName: string,
  clientAddress: string,
) {
  const deviceCode = randomSecret();
  const drawn = randomString(USER_CODE_ALPHABET, 8);
  const userCode = `${drawn.slice(0, 4)}-${drawn.slice(4)}`;
  const now = ctx.clock();
  await ctx.web.insertDeviceCode({
    device_hash: sha256(deviceCode),
    user_code: userCode,
    client_name: displayableClientName(clientName),
    client_address: clientAddress,
    status: "pending",
    account_id: null,
    created_at: now,
    expires_at: now + DEVICE_CODE_LIFETIME_S * 1000,
    last_polled_at: null,
  });
  return { deviceCode, userCode, expiresIn: DEVICE_CODE_LIFETIME_S, interval: POLL_INTERVAL_S };
}

/** Normalizes what a person types: case, spaces and the dash do not matter. */
export function normalizeUserCode(input: string): string {
  const letters = input.toUpperCase().replace(/[^A-Z]/g, "");
  return letters.length === 8 ? `${letters.slice(0, 4)}-${letters.slice(4)}` : "";
}

export interface PendingDeviceLogin {
  userCode: string;
  /** What the device called itself: unverified. */
  clientName: string;
  /** Epoch ms. */
  startedAt: number;
  /** The address the login was started from (IPv6 as its /64), or null if unrecorded. */
  startedFrom: string | null;
  deviceHash: string;
}

/** The pending request a person is about to approve, or null. */
export async function findPendingDeviceLogin(
  ctx: Needs<"web" | "clock">,
  userCode: string,
): Promise<PendingDeviceLogin | null> {
  const code = await ctx.web.findDeviceCodeByUserCode(normalizeUserCode(userCode));
  if (code?.status !== "pending" || code.expires_at <= ctx.clock()) return null;
  return {
    userCode: code.user_code,
    clientName: displayableClientName(code.client_name),
    startedAt: code.created_at,
    startedFrom: code.client_address,
    deviceHash: code.device_hash,
  };
}

export async function decideDeviceLogin(
  ctx: Needs<"web" | "clock">,
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

/** What each refusal of a poll means, for the device's person (RFC 8628 section 3.5). */
export const POLL_ERROR_DESCRIPTIONS: Record<PollError, string> = {
  authorization_pending: "The person has not approved yet",
  slow_down: "Polling too fast: wait 5 more seconds between polls",
  access_denied: "The person denied the request",
  expired_token: "The code expired; start again",
  invalid_grant: "Unknown or already used device code",
};

type PollError = Extract<PollResult, { ok: false }>["error"];

export type PollResult =
  | { ok: true; userKey: string; keyId: string; accountId: string }
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
 * One poll of the CLI. Once approved, the user key is created here, named after the device,
 * and handed over exactly once: no secret waits in the database for the CLI to come.
 */
export async function pollDeviceLogin(
  ctx: Needs<"web" | "store" | "clock">,
  deviceCode: string,
  /** The OAuth client polling, recorded on the key; absent for the pre-OAuth JSON endpoint. */
  clientId?: string,
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
  const grant = clientId ? { clientId, audience: null, rotating: false } : undefined;
  const name = code.client_name.slice(0, 100);
  const issued = await issueKey(ctx, "user", code.account_id, name, grant);
  if (!issued.ok) return { ok: false, error: "invalid_grant" };
  return { ok: true, userKey: issued.key, keyId: issued.record.id, accountId: code.account_id };
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
