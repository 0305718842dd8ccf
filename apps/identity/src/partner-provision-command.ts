import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { type OperatorName, recordAdminAction, recordAdminKeyChange } from "./audit-command.ts";
import type { CommandAnswer } from "./command-answer.ts";
import type { Needs } from "./context.ts";
import { createAccount, findAccountByEmail } from "./domain/accounts.ts";
import { issueKey } from "./domain/credentials.ts";
import { hashKey, isWellFormedKey } from "./domain/keys.ts";
import { createPartner, listOwnedPartners } from "./domain/partners.ts";

type ProvisionContext = Needs<"store" | "audit" | "clock"> & OperatorName;

/** The key's name on the partner's page: where it was made. */
const KEY_NAME = "provisioned (partners provision)";

/**
 * `agentpass-server partners provision --name N --owner <email> --key-file <path>`: makes sure a
 * partner named N, owned by the account of <email> (made if missing), has a working key in
 * <path>. A deploy's one-shot job runs it before the partner's service starts (compose.yaml: the
 * notes API), every time: a key file whose key is accepted is kept as it is; otherwise the
 * account, the partner and a new key are made as needed and the key written to <path> (mode
 * 0600, replaced whole, never half written). Each change is recorded in the audit log.
 */
export async function runPartnerProvisionCommand(
  ctx: ProvisionContext,
  options: { name: string | undefined; owner: string | undefined; keyFile: string | undefined },
): Promise<CommandAnswer> {
  const { name, owner, keyFile } = options;
  if (!name || !owner || !keyFile) {
    return { ok: false, error: "partners provision needs --name, --owner and --key-file" };
  }
  const account = await findOrCreateAccount(ctx, owner);
  if (!account.ok) return account;
  const partner = await findOrCreatePartner(ctx, account.id, name);
  if (!partner.ok) return partner;
  if (await holdsWorkingKey(ctx, keyFile, partner.id)) {
    return { ok: true, output: `kept the key in ${keyFile} (partner ${partner.id})` };
  }
  const issued = await issueKey(ctx, "partner", partner.id, KEY_NAME);
  if (!issued.ok) return { ok: false, error: "Key name must be 1 to 100 characters" };
  await recordAdminKeyChange(ctx, "partner", "create", issued.record.id);
  const draft = `${keyFile}.new`;
  try {
    writeFileSync(draft, `${issued.key}\n`, { mode: 0o600 });
    renameSync(draft, keyFile);
  } catch (error) {
    return { ok: false, error: `Cannot write ${keyFile}: ${(error as Error).message}` };
  }
  return { ok: true, output: `wrote a new key to ${keyFile} (partner ${partner.id})` };
}

async function findOrCreateAccount(
  ctx: ProvisionContext,
  email: string,
): Promise<{ ok: true; id: string } | { ok: false; error: string }> {
  const found = await findAccountByEmail(ctx, email);
  if (found.ok) return { ok: true, id: found.account.id };
  if (found.code === "INVALID_EMAIL") return { ok: false, error: found.reason };
  const created = await createAccount(ctx, email);
  if (!created.ok) {
    return { ok: false, error: created.code === "INVALID_EMAIL" ? created.reason : "No account" };
  }
  const { id } = created.account;
  await recordAdminAction(ctx, {
    action: "account.create",
    accountId: id,
    subject: { kind: "account", id },
  });
  return { ok: true, id };
}

async function findOrCreatePartner(
  ctx: ProvisionContext,
  ownerAccountId: string,
  name: string,
): Promise<{ ok: true; id: string } | { ok: false; error: string }> {
  const owned = await listOwnedPartners(ctx, ownerAccountId);
  const existing = owned.find((partner) => partner.name === name);
  if (existing) return { ok: true, id: existing.id };
  const created = await createPartner(ctx, { ownerAccountId, name });
  if (!created.ok) return { ok: false, error: created.reason };
  const { id } = created.partner;
  await recordAdminAction(ctx, {
    action: "partner.create",
    accountId: ownerAccountId,
    subject: { kind: "partner", id },
    detail: { name },
  });
  return { ok: true, id };
}

/** Whether `keyFile` holds a key of `partnerId` that is not revoked. */
async function holdsWorkingKey(
  ctx: ProvisionContext,
  keyFile: string,
  partnerId: string,
): Promise<boolean> {
  if (!existsSync(keyFile)) return false;
  const key = readFileSync(keyFile, "utf8").trim();
  if (!isWellFormedKey("partner", key)) return false;
  const checked = await ctx.store.beginHotRead();
  const found = await ctx.store.findKeyByHash(checked, "partner_keys", hashKey(key));
  return found?.ownerId === partnerId && found.revokedAt === null;
}
