import { canonicalizeEmail } from "@agentpass/verify";
import type { Needs } from "../context.ts";
import type { Account } from "../store/store.ts";

type AccountResult =
  | { ok: true; account: Account }
  | { ok: false; code: "INVALID_EMAIL"; reason: string }
  | { ok: false; code: "ACCOUNT_EXISTS" | "ACCOUNT_NOT_FOUND" };

/** Opens an account for a proven (or operator-vouched) email, in its canonical form. */
export async function createAccount(
  ctx: Needs<"store" | "clock">,
  email: string,
): Promise<AccountResult> {
  const canonical = canonicalizeEmail(email);
  if (!canonical.ok) return { ok: false, code: "INVALID_EMAIL", reason: canonical.reason };
  const account = await ctx.store.createAccount(canonical.email, ctx.clock());
  return account ? { ok: true, account } : { ok: false, code: "ACCOUNT_EXISTS" };
}

/** The account of `email`, matched on the canonical form. */
export async function findAccountByEmail(
  ctx: Needs<"store">,
  email: string,
): Promise<AccountResult> {
  const canonical = canonicalizeEmail(email);
  if (!canonical.ok) return { ok: false, code: "INVALID_EMAIL", reason: canonical.reason };
  const account = await ctx.store.findAccountByEmail(canonical.email);
  return account ? { ok: true, account } : { ok: false, code: "ACCOUNT_NOT_FOUND" };
}

/**
 * Deletes an account with its web sessions, user keys, partners and their keys (the foreign keys
 * cascade). Tokens made with them are refused from the next request on, in every process.
 */
export async function deleteAccount(ctx: Needs<"store">, accountId: string): Promise<void> {
  await ctx.store.deleteAccount(accountId);
}

/** A partner that learned an account's email by verifying one of its tokens. */
interface EmailSeenBy {
  partnerId: string;
  name: string;
  website: string | null;
  firstAt: number;
  lastAt: number;
  count: number;
  /** When the partner was deleted; null while it exists. Its name and website are as they were. */
  deletedAt: number | null;
}

/**
 * The partners that verified a token of the account, and so learned its email, most recent
 * first, those deleted since included. This instance's pending counts are written first.
 */
export async function partnersThatSawEmail(
  ctx: Needs<"usage" | "usageStore">,
  accountId: string,
): Promise<EmailSeenBy[]> {
  await ctx.usage.flush();
  const rows = await ctx.usageStore.activityOf(accountId);
  return rows.map((row) => ({
    partnerId: row.partnerId,
    name: row.name,
    website: row.website,
    firstAt: Number(row.firstAt),
    lastAt: Number(row.lastAt),
    count: Number(row.count),
    deletedAt: row.deletedAt === null ? null : Number(row.deletedAt),
  }));
}
