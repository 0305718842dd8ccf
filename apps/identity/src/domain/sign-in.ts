import { randomInt, randomUUID } from "node:crypto";
import { canonicalizeEmail } from "@agentpass/verify";
import type { Needs } from "../context.ts";
import { keyedHash, randomSecret, sameHash, sha256 } from "../infra/crypto.ts";
import type { Mailer } from "../infra/mailer.ts";
import type { RateLimiter } from "../infra/rate-limit.ts";
import type { Account } from "../store/store.ts";

const CODE_LIFETIME_MS = 10 * 60 * 1000;
const MAX_CODE_ATTEMPTS = 5;
/** Digits of the code mailed while an address's budget of 6-digit codes is spent. */
export const LONG_CODE_DIGITS = 16;

export interface SignInDeps {
  ctx: Needs<"web" | "clock" | "keys">;
  mailer: Mailer;
  /** Codes mailed to one address at the request of browsers it never signed in with. */
  perAddress: RateLimiter;
  /** Codes asked for from one client address by such browsers. */
  perIp: RateLimiter;
  /** Codes a browser that signed in with the address before may ask for it. */
  perRememberedBrowser: RateLimiter;
  /**
   * Long codes one client address may ask for an address whose `perAddress` budget is spent:
   * strangers elsewhere cannot spend it, so the owner still gets a code from a new browser.
   */
  perIpPastAddressBudget: RateLimiter;
  /** Failed sign-ins (wrong code, no open code, link of another browser) per client address. */
  failuresPerIp: RateLimiter;
  publicUrl: string;
}

/** A browser that signed in with an address is remembered for it this long. */
const REMEMBERED_BROWSER_MS = 400 * 24 * 60 * 60 * 1000;

type RequestCodeResult =
  | { ok: true }
  | { ok: false; code: "INVALID_EMAIL"; reason: string }
  | { ok: false; code: "RATE_LIMITED"; retryAfterSeconds: number }
  | { ok: false; code: "MAIL_FAILED" };

/**
 * Mails a 6-digit code (16 digits past the address's budget) and a one-click link for `email`, redeemable only by the browser that
 * asked (`browserNonce`, a random cookie). Sign-up and sign-in are this one flow: whether the
 * address has an account is never looked at here, so the answer cannot reveal it.
 *
 * The inbox is protected by limits per address and per client address. A browser that signed in
 * with the address before is counted apart, on its own budget. A new browser is counted on its
 * client address's budget and the address's budget of 6-digit codes, which strangers may spend;
 * once it is spent, each client address still gets a few codes of 16 digits for the address
 * (`perIpPastAddressBudget`): the mailbox proves its owner, who types or follows what it
 * received, while a stranger guessing gets 5 tries at 10^16 codes instead of 10^6. So strangers
 * asking for codes for someone's address never lock its owner out, from any browser.
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
  const counted = remembered
    ? await countOn(deps.perRememberedBrowser, `${browserHash}:${address}`, false)
    : await countNewBrowser(deps, address, input.ip);
  if (!counted.ok) {
    return { ok: false, code: "RATE_LIMITED", retryAfterSeconds: counted.retryAfterSeconds };
  }
  const now = deps.ctx.clock();
  const code = counted.long ? longCode() : String(randomInt(0, 1_000_000)).padStart(6, "0");
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
    // A long code in groups of 4 digits, as people read and type it.
    const shown = counted.long ? code.replace(/(\d{4})(?=\d)/g, "$1 ") : code;
    await deps.mailer.send({
      to: canonical.email,
      subject: `Your AgentPass sign-in code: ${shown}`,
      text: `Your AgentPass sign-in code is ${shown}. It works for 10 minutes, in the browser where you asked for it.\n\nOr open this link in that browser: ${deps.publicUrl}/sign-in/link#${link}\n\nIf you did not ask for it, ignore this mail.`,
    });
  } catch {
    return { ok: false, code: "MAIL_FAILED" };
  }
  return { ok: true };
}

/** A code request counted: whether its code is to be long, or the seconds to wait. */
type CountedRequest = { ok: true; long: boolean } | { ok: false; retryAfterSeconds: number };

async function countOn(limiter: RateLimiter, key: string, long: boolean): Promise<CountedRequest> {
  const taken = await limiter.take(key);
  return taken.ok ? { ok: true, long } : { ok: false, retryAfterSeconds: taken.resetSeconds };
}

/**
 * A new browser's request: on its client address's budget, then on the address's budget of
 * 6-digit codes; past that, on this client address's own budget for the address, for a long code.
 */
async function countNewBrowser(
  deps: SignInDeps,
  address: string,
  ip: string,
): Promise<CountedRequest> {
  const perIp = await countOn(deps.perIp, ip, false);
  if (!perIp.ok) return perIp;
  if ((await deps.perAddress.take(address)).ok) return { ok: true, long: false };
  return countOn(deps.perIpPastAddressBudget, `${ip}:${address}`, true);
}

/** A code of `LONG_CODE_DIGITS` digits, uniform: two draws, as `randomInt` stops at 2^48. */
function longCode(): string {
  const half = LONG_CODE_DIGITS / 2;
  const draw = () => String(randomInt(0, 10 ** half)).padStart(half, "0");
  return draw() + draw();
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
  | { ok: false; code: "NO_CODE" }
  | { ok: false; code: "RATE_LIMITED"; retryAfterSeconds: number };

/**
 * Runs a redemption within the client address's budget of failures (`failuresPerIp`): counted
 * after a failure, so sign-ins that work cost none; past it, refused before any work, and the
 * failure that spent it is answered as refused (nothing more is recorded of it).
 */
async function withinFailureBudget(
  failures: RateLimiter,
  ip: string,
  redeem: () => Promise<RedeemResult>,
): Promise<RedeemResult> {
  const refused = failures.refusal(ip);
  if (refused) return { ok: false, code: "RATE_LIMITED", retryAfterSeconds: refused.resetSeconds };
  const result = await redeem();
  if (result.ok) return result;
  const counted = await failures.take(ip);
  return counted.ok
    ? result
    : { ok: false, code: "RATE_LIMITED", retryAfterSeconds: counted.resetSeconds };
}

/**
 * Redeems the code typed in the browser that asked for it: at most 5 tries in all, single use.
 * Each try is counted before it is judged, in one statement, so tries sent at once cannot share
 * a count: brute force gets 5 guesses in a million (in 10^16 for a long code), whatever the
 * concurrency. Failures count on the client address's budget (`withinFailureBudget`).
 */
export function redeemSignInCode(
  ctx: Needs<"web" | "store" | "clock" | "keys">,
  failures: RateLimiter,
  input: { browserNonce: string; code: string; ip: string },
): Promise<RedeemResult> {
  return withinFailureBudget(failures, input.ip, () => judgeCode(ctx, input));
}

async function judgeCode(
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
 * browser takes one of the code's tries, like a wrong code. Failures count as a code's do.
 */
export function redeemSignInLink(
  ctx: Needs<"web" | "store" | "clock">,
  failures: RateLimiter,
  input: { browserNonce: string; link: string; ip: string },
): Promise<RedeemResult> {
  return withinFailureBudget(failures, input.ip, () => judgeLink(ctx, input));
}

async function judgeLink(
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
