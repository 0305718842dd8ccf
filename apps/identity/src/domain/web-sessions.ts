import type { Needs } from "../context.ts";
import { randomSecret, sha256 } from "../infra/crypto.ts";

/** A browser session ends after a day without use, and after 30 days whatever happens. */
const SESSION_IDLE_MS = 24 * 60 * 60 * 1000;
export const SESSION_MAX_MS = 30 * 24 * 60 * 60 * 1000;
const TOUCH_EVERY_MS = 5 * 60 * 1000;

export interface WebSession {
  accountId: string;
  email: string;
  /** Hash of the cookie value: the CSRF token of forms is derived from it. */
  idHash: string;
}

/** Starts a new session (a fresh id at every sign-in); returns the cookie value. */
export async function startWebSession(
  ctx: Needs<"web" | "clock">,
  accountId: string,
): Promise<string> {
  const token = randomSecret();
  const now = ctx.clock();
  await ctx.web.insertSession({
    id_hash: sha256(token),
    account_id: accountId,
    created_at: now,
    last_seen_at: now,
    expires_at: now + SESSION_MAX_MS,
  });
  return token;
}

/** The session of a cookie value, or null when it is unknown, idle too long or too old. */
export async function resolveWebSession(
  ctx: Needs<"web" | "clock">,
  token: string | undefined,
): Promise<WebSession | null> {
  if (!token || token.length > 100) return null;
  const idHash = sha256(token);
  const session = await ctx.web.findSession(idHash);
  const now = ctx.clock();
  if (!session) return null;
  if (session.expiresAt <= now || now - session.lastSeenAt >= SESSION_IDLE_MS) {
    await ctx.web.deleteSession(idHash);
    return null;
  }
  // Writing on every page view would make reads writes; a few minutes' precision is enough.
  if (now - session.lastSeenAt >= TOUCH_EVERY_MS) await ctx.web.touchSession(idHash, now);
  return { accountId: session.accountId, email: session.email, idHash };
}

export async function endWebSession(ctx: Needs<"web">, token: string | undefined): Promise<void> {
  if (token) await ctx.web.deleteSession(sha256(token));
}

export async function endAllWebSessions(ctx: Needs<"web">, accountId: string): Promise<void> {
  await ctx.web.deleteSessionsOf(accountId);
}
