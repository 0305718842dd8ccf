import { type OperatorName, recordAdminAction } from "./audit-command.ts";
import { type CommandAnswer, listCommand } from "./command-answer.ts";
import type { Needs } from "./context.ts";
import { deleteAccount, findAccountByEmail } from "./domain/accounts.ts";
import { awaitRecordedUsage } from "./domain/usage-recorder.ts";
import type { AccountRecord, AccountRow, OperatorStore } from "./store/operator-store.ts";

export type AccountsAction = "list" | "show" | "export" | "delete";

/** The operator's context: the service's, and the store of listings and records. */
export type OperatorContext = Needs<"store" | "audit" | "usage" | "clock"> &
  OperatorName & { operator: OperatorStore };

/**
 * `agentpass-server accounts list|show|export|delete`. `list` and `show` print accounts with what
 * they hold; `export` writes every row the service holds about the person as one JSON document
 * (for an access request: no hash of any secret is in it); `delete` deletes the account as its
 * owner can on the dashboard. `export` and `delete` are recorded in the audit log.
 */
export async function runAccountsCommand(
  ctx: OperatorContext,
  action: AccountsAction,
  email: string | undefined,
  options: { json: boolean; limit: string | undefined },
): Promise<CommandAnswer> {
  if (action === "list") {
    return listCommand(options, ctx.operator.listAccounts, presentAccount, accountLine);
  }
  if (!email) return { ok: false, error: "Missing email" };
  const found = await findAccountByEmail(ctx, email);
  if (!found.ok) {
    return {
      ok: false,
      error: found.code === "INVALID_EMAIL" ? found.reason : `No account for ${email}`,
    };
  }
  const { id } = found.account;
  const subject = { kind: "account", id };
  switch (action) {
    case "show": {
      const record = await ctx.operator.accountRecord(id);
      if (!record) return { ok: false, error: `No account for ${email}` };
      const summary = summarize(record);
      return { ok: true, output: options.json ? JSON.stringify(summary) : summaryText(summary) };
    }
    case "export": {
      // Verifications are counted in each instance's memory and written every few seconds.
      await awaitRecordedUsage(ctx.usage);
      const record = await ctx.operator.accountRecord(id);
      if (!record) return { ok: false, error: `No account for ${email}` };
      await recordAdminAction(ctx, { action: "account.export", accountId: id, subject });
      const exported = { exportedAt: new Date(ctx.clock()).toISOString(), ...record };
      return { ok: true, output: JSON.stringify(withIsoTimes(exported), null, 2) };
    }
    case "delete": {
      await deleteAccount(ctx, id);
      await recordAdminAction(ctx, { action: "account.delete", accountId: id, subject });
      return { ok: true, output: `deleted ${email}` };
    }
  }
}

const iso = (time: number) => new Date(time).toISOString();

function presentAccount(account: AccountRow) {
  return { ...account, createdAt: iso(account.createdAt) };
}

function accountLine(account: AccountRow): string {
  return [
    account.id,
    account.email,
    `created ${iso(account.createdAt)}`,
    `${account.activeKeys} keys`,
    `${account.activeGrants} grants`,
    `${account.partners} partners`,
  ].join("  ");
}

/** What `accounts show` prints: the account and how many rows of each kind name it. */
function summarize(record: AccountRecord) {
  const { account, ...rows } = record;
  const counts = Object.fromEntries(
    Object.entries(rows).map(([table, list]) => [table, list.length]),
  );
  return {
    id: account.id,
    email: account.email,
    createdAt: iso(Number(account.created_at)),
    rows: counts,
  };
}

function summaryText(summary: ReturnType<typeof summarize>): string {
  const rows = Object.entries(summary.rows).map(([table, count]) => `  ${table}: ${count}`);
  return [`${summary.id}  ${summary.email}  created ${summary.createdAt}`, ...rows].join("\n");
}

/** Columns named `at` or `*_at` hold epoch milliseconds: an export gives them in ISO 8601. */
function withIsoTimes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withIsoTimes);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, field]) => [
      name,
      (name === "at" || name.endsWith("_at")) && field !== null && !Number.isNaN(Number(field))
        ? iso(Number(field))
        : withIsoTimes(field),
    ]),
  );
}
