import { randomInt, randomUUID } from "node:crypto";
import { canonicalizeEmail } from "@agentpass/verify";
import type { Needs } from "../context.ts";
import { keyedHash, randomSecret, sameHash, sha256 } from "../infra/crypto.ts";
import type { Mailer } from "../infra/mailer.ts";
import type { RateLimiter } from "../infra/rate-limit.ts";
import type { Account } from "../store/store.ts";

export const CODE_LIFETIME_MS = 10 * 60 * 1000;
export const MAX_CODE_ATTEMPTS = 5;

export interface SignInDeps {
  ctx: Needs<"web" | "clock" | "keys">;
  mailer: Mailer;
  /** Codes mailed to one address at the request of browsers it never signed in with. */
  perAddress: RateLimiter;
  /** Codes asked for from one client address by such browsers. */
  perIp: RateLimiter;
  /** Codes a browser that signed in with the address before may ask for it. */
  perRememberedBrowser: RateLimiter;
  publicUrl: string;
}

/** A browser that signed in with an address is remembered for it this long. */
export const REMEMBERED_BROWSER_MS = 400 * 24 * 60 * 60 * 1000;

export type RequestCodeResult =
  | { ok: true }
  | { ok: false; code: "INVALID_EMAIL"; reason: string }
  | { ok: false; code: "RATE_LIMITED"; retryAfterSeconds: number }
  | { ok: false; code: "MAIL_FAILED" };

/**
 * Mails a 6-digit code and a one-click link for `email`, redeemable only by the browser that
 * asked (`browserNonce`, a random cookie). Sign-up and sign-in are this one flow: whether the
 * address has an account is never looked at here, so the answer cannot reveal it.
 *
 * The inbox is protected by limits per address and per client address, which strangers share:
 * anyone may spend them. A browser that signed in with the address before is counted apart, on
 * its own budget, so strangers asking for codes for someone's address never lock its owner out.
 */
export async function requestSignInCode(
  deps: SignInDeps,
  input: { email: string; browserNonce: string; ip: string },
): Promise<RequestCodeResult> {
  const canonical = canonicalizeEmail(input.email);
  if (!canonical.ok) return { ok: false, code: "INVALID_EMAIL", reason: canonical.reason };
  const browserHash = sha256(input.browserNonce);
  const remembered = await deps.ctx.web.isRememberedBrowser(
    browserHash,
    canonical.email,
    deps.ctx.clock(),
  );
  // Counted by an HMAC of the address, never the address: a counter outlives an account's
  // deletion by its window, and a rate-limit store (Redis) holds no email.
  const address = keyedHash(deps.ctx.keys.shortCodes, canonical.email);
  const limits = remembered
    ? ([[deps.perRememberedBrowser, `${browserHash}:${address}`]] as const)
    : ([
        [deps.perIp, input.ip],
        [deps.perAddress, address],
      ] as const);
  for (const [limiter, key] of limits) {
    const limited = await limiter.take(key);
    if (!limited.ok) {
      return { ok: false, code: "RATE_LIMITED", retryAfterSeconds: limited.resetSeconds };
    }
  }
  const now = deps.ctx.clock();
  const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
  const link = randomSecret();
  await deps.ctx.web.insertSignInCode({
    id: randomUUID(),
    email: canonical.email,
    // A million codes: a plain hash of one is inverted in seconds by whoever reads the row, so
    // it is keyed with a key that is not in the database. The link's 256 bits need no key.
    code_hash: keyedHash(deps.ctx.keys.shortCodes, code),
    link_hash: sha256(link),
    browser_hash: browserHash,
    attempts: 0,
    created_at: now,
    expires_at: now + CODE_LIFETIME_MS,
    used_at: null,
  });
  try {
    await deps.mailer.send({
      to: canonical.email,
      subject: `Your AgentPass sign-in code: ${code}`,
      text: `Your AgentPass sign-in code is ${code}. It works for 10 minutes, in the browser where you asked for it.\n\nOr open this link in that browser: ${deps.publicUrl}/sign-in/link#${link}\n\nIf you did not ask for it, ignore this mail.`,
    });
  } catch {
    return { ok: false, code: "MAIL_FAILED" };
  }
  return { ok: true };
}

/** The address of the code this browser is waiting for, if any: its own page may show it. */
export async function pendingSignInAddress(
  ctx: Needs<"web" | "clock">,
  browserNonce: string,
): Promise<string | null> {
  const pending = await ctx.web.findOpenSignInCode(sha256(browserNonce), ctx.clock());
  return pending?.email ?? null;
}

/**
 * A wrong code names the address it was for (the audit log records the failure on its account)
 * and whether it was the last try the code had (`lockedOut`).
 */
export type RedeemResult =
  | { ok: true; account: Account }
  | { ok: false; code: "INVALID_CODE"; email: string; lockedOut: boolean }
  | { ok: false; code: "NO_CODE" };

/**
 * Redeems the code typed in the browser that asked for it: at most 5 tries in all, single use.
 * Each try is counted before it is judged, in one statement, so tries sent at once cannot share
 * a count: brute force gets 5 guesses in a million, whatever the concurrency.
 */
export async function redeemSignInCode(
  ctx: Needs<"web" | "store" | "clock" | "keys">,
  input: { browserNonce: string; code: string },
): Promise<RedeemResult> {
  const now = ctx.clock();
  const pending = await ctx.web.findOpenSignInCode(sha256(input.browserNonce), now);
  const judged = pending && (await ctx.web.takeSignInAttempt(pending.id, now, MAX_CODE_ATTEMPTS));
  if (!pending || !judged) return { ok: false, code: "NO_CODE" };
  if (!sameHash(judged.code_hash, keyedHash(ctx.keys.shortCodes, input.code.trim()))) {
    // The last wrong try ends the code, so the browser's next try is told to ask for a new one.
    const lockedOut = judged.attempts >= MAX_CODE_ATTEMPTS;
    if (lockedOut) await ctx.web.useSignInCode(pending.id, now);
    return { ok: false, code: "INVALID_CODE", email: judged.email, lockedOut };
  }
  return finish(ctx, pending.id, judged.email, judged.browser_hash);
}

/**
 * Redeems the one-click link, in the browser that asked for it. A link opened in another
 * browser takes one of the code's tries, like a wrong code.
 */
export async function redeemSignInLink(
  ctx: Needs<"web" | "store" | "clock">,
  input: { browserNonce: string; link: string },
): Promise<RedeemResult> {
  const now = ctx.clock();
  const pending = await ctx.web.findSignInCodeByLink(sha256(input.link));
  const judged = pending && (await ctx.web.takeSignInAttempt(pending.id, now, MAX_CODE_ATTEMPTS));
  if (!pending || !judged || !sameHash(judged.browser_hash, sha256(input.browserNonce))) {
    return { ok: false, code: "NO_CODE" };
  }
  return finish(ctx, pending.id, judged.email, judged.browser_hash);
}

async function finish(
  ctx: Needs<"web" | "store" | "clock">,
  codeId: string,
  email: string,
  browserHash: string,
): Promise<RedeemResult> {
  const now = ctx.clock();
  if (!(await ctx.web.useSignInCode(codeId, now))) return { ok: false, code: "NO_CODE" };
  await ctx.web.rememberBrowser(browserHash, email, now + REMEMBERED_BROWSER_MS);
  const account =
    (await ctx.store.findAccountByEmail(email)) ??
    (await ctx.store.createAccount(email, ctx.clock()));
  // A concurrent first sign-in may have created it between the two calls.
  const settled = account ?? (await ctx.store.findAccountByEmail(email));
  if (!settled) throw new Error("account vanished during sign-in");
  return { ok: true, account: settled };
}
