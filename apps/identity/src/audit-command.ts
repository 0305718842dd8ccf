import { userInfo } from "node:os";
import { type CommandAnswer, parseLimit } from "./command-answer.ts";
import type { Needs } from "./context.ts";
import { findAccountByEmail } from "./domain/accounts.ts";
import type { AuditAction, AuditEvent } from "./domain/audit.ts";
import type { KeyKind } from "./domain/keys.ts";
import type { AuditFilter, StoredAuditEvent } from "./store/audit-store.ts";

/** The most events `audit` prints (`--limit`; 100 unset, `DEFAULT_LIMIT`). */
const AUDIT_MAX_LIMIT = 10_000;

interface AuditCommandOptions {
  account?: string | undefined;
  action?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
  json?: boolean | undefined;
}

/**
 * `agentpass-server audit`: the stored security events, newest first, filtered by the account of
 * an email, an action, a time range (ISO 8601) and a count; one line each, or a JSON array.
 */
export async function runAuditCommand(
  ctx: Needs<"store" | "audit">,
  options: AuditCommandOptions,
): Promise<CommandAnswer> {
  const limit = parseLimit(options.limit, AUDIT_MAX_LIMIT);
  if (typeof limit === "string") return { ok: false, error: limit };
  const filter: AuditFilter = { limit };
  for (const bound of ["since", "until"] as const) {
    const text = options[bound];
    if (text === undefined) continue;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return { ok: false, error: `--${bound} must be a date (ISO 8601)` };
    filter[bound] = at;
  }
  if (options.action !== undefined) filter.action = options.action;
  if (options.account !== undefined) {
    const found = await findAccountByEmail(ctx, options.account);
    if (!found.ok) return { ok: false, error: `No account for ${options.account}` };
    filter.accountId = found.account.id;
  }
  const events = await ctx.audit.list(filter);
  if (options.json) return { ok: true, output: JSON.stringify(events.map(presentEvent)) };
  return { ok: true, output: events.map(eventLine).join("\n") };
}

/** An event as `--json` prints it: the stored fields, its time in ISO 8601. */
function presentEvent(event: StoredAuditEvent) {
  return { ...event, at: new Date(event.at).toISOString() };
}

/**
 * One event on one line: time, action, outcome, actor, account, subject, address, repeats,
 * browser. What a client sent is quoted as JSON; the command escapes every control character
 * before it prints (`terminalText`).
 */
function eventLine(event: StoredAuditEvent): string {
  // A person and a client are named by id (`account:…`, `client:…`); the operator and the service by kind.
  const actor = event.actorId === null ? event.actorKind : `${event.actorKind}:${event.actorId}`;
  const subject = event.subjectKind ? `${event.subjectKind}:${event.subjectId ?? "-"}` : "-";
  return [
    new Date(event.at).toISOString(),
    event.action,
    event.outcome,
    `by ${actor}`,
    `account ${event.accountId ?? "-"}`,
    subject,
    `from ${event.clientAddress ?? "-"}`,
    // Repeats of a stranger's refusal, folded into one row: how many, and until when.
    event.lastAt === null
      ? ""
      : `×${event.occurrences} until ${new Date(event.lastAt).toISOString()}`,
    event.userAgent === null ? "" : JSON.stringify(event.userAgent),
    event.detail === null ? "" : JSON.stringify(event.detail),
  ]
    .filter((part) => part !== "")
    .join("  ");
}

/** Who runs `agentpass-server`: the name its audit events are attributed to. */
export interface OperatorName {
  operatorName: string;
}

/**
 * The operator's name: `--operator`, else `AGENTPASS_OPERATOR` (both in `given`), else the
 * system user running the command; at most 100 characters.
 */
export function operatorNameOf(given: string | undefined): string {
  const named = given?.trim();
  if (named) return named.slice(0, 100);
  try {
    return userInfo().username;
  } catch {
    // A container may run as a user id with no name (no passwd entry).
    return `uid ${process.getuid?.() ?? "unknown"}`;
  }
}

/** Records what the operator did with `agentpass-server`, attributed to their name. */
export function recordAdminAction(
  ctx: Needs<"audit"> & OperatorName,
  event: Omit<AuditEvent, "actor" | "outcome" | "client">,
): Promise<void> {
  const actor = { kind: "admin", id: ctx.operatorName } as const;
  return ctx.audit.record({ ...event, actor, outcome: "success" });
}

/**
 * Records a key the operator created or revoked, on the account that owns it (a partner key's:
 * the partner's owner).
 */
export async function recordAdminKeyChange(
  ctx: Needs<"audit" | "store"> & OperatorName,
  kind: KeyKind,
  change: "create" | "revoke",
  keyId: string,
): Promise<void> {
  const key = await ctx.store.findKeyById(kind === "user" ? "user_keys" : "partner_keys", keyId);
  if (!key) return;
  const partner = kind === "partner" ? await ctx.store.findPartner(key.ownerId) : undefined;
  const action: AuditAction = `${kind}_key.${change}`;
  await recordAdminAction(ctx, {
    action,
    accountId: kind === "user" ? key.ownerId : (partner?.ownerAccountId ?? null),
    subject: { kind: `${kind}_key`, id: key.id },
    detail: kind === "partner" ? { name: key.name, partnerId: key.ownerId } : { name: key.name },
  });
}
