import { canonicalizeEmail } from "@agentpass/verify";
import type { IdentityContext } from "../context.ts";
import type { Account } from "../store/store.ts";

export type AccountResult =
  | { ok: true; account: Account }
  | { ok: false; code: "INVALID_EMAIL"; reason: string }
  | { ok: false; code: "ACCOUNT_EXISTS" | "ACCOUNT_NOT_FOUND" };

/** Opens an account for a proven (or operator-vouched) email, in its canonical form. */
export async function createAccount(ctx: IdentityContext, email: string): Promise<AccountResult> {
  const canonical = canonicalizeEmail(email);
  if (!canonical.ok) return { ok: false, code: "INVALID_EMAIL", reason: canonical.reason };
  const account = await ctx.store.createAccount(canonical.email, ctx.clock());
  return account ? { ok: true, account } : { ok: false, code: "ACCOUNT_EXISTS" };
}

/** The account of `email`, matched on the canonical form. */
export async function findAccountByEmail(
  ctx: IdentityContext,
  email: string,
): Promise<AccountResult> {
  const canonical = canonicalizeEmail(email);
  if (!canonical.ok) return { ok: false, code: "INVALID_EMAIL", reason: canonical.reason };
  const account = await ctx.store.findAccountByEmail(canonical.email);
  return account ? { ok: true, account } : { ok: false, code: "ACCOUNT_NOT_FOUND" };
}
