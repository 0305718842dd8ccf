import { terminalText } from "@agentpass/http";
import { type AccountsAction, runAccountsCommand } from "./accounts-command.ts";
import {
  operatorNameOf,
  recordAdminAction,
  recordAdminKeyChange,
  runAuditCommand,
} from "./audit-command.ts";
import type { CommandAnswer } from "./command-answer.ts";
import { SecretSchema } from "./config.ts";
import { createAccount, findAccountByEmail } from "./domain/accounts.ts";
import type { AuditAction } from "./domain/audit.ts";
import { issueKey, listKeys, revokeKey } from "./domain/credentials.ts";
import type { KeyKind } from "./domain/keys.ts";
import { createPartner } from "./domain/partners.ts";
import type { SealingKeyInfo } from "./domain/sealing-keys.ts";
import {
  type PartnerResourcesAction,
  runPartnerResourcesCommand,
} from "./partner-resources-command.ts";
import { type PartnersAction, runPartnersCommand } from "./partners-command.ts";
import { type IdentityService, INSTANCE_SEEN_MS } from "./service.ts";
import { createOperatorStore } from "./store/operator-store.ts";

/** A command used wrongly: the usage is printed with it, and the exit status is 2. */
export class UsageError extends Error {}
/** A command refused: its message is printed, and the exit status is 1. */
export class CommandError extends Error {}

/** The options `agentpass-server` parses, as the admin commands read them. */
interface AdminValues {
  json?: boolean | undefined;
  name?: string | undefined;
  owner?: string | undefined;
  website?: string | undefined;
  description?: string | undefined;
  listed?: boolean | undefined;
  account?: string | undefined;
  action?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: string | undefined;
  /** Who runs the command (`--operator`, else `AGENTPASS_OPERATOR`); unset: the system user. */
  operator?: string | undefined;
}

/**
 * Runs an admin command (`group verb`, such as `user-keys create`) against an open service:
 * what it prints goes to stdout; a refusal is thrown as `CommandError`, a misuse as `UsageError`.
 */
export async function runAdminCommand(
  service: IdentityService,
  command: string,
  argument: string | undefined,
  url: string | undefined,
  values: AdminValues,
): Promise<void> {
  try {
    await runCommand(service, command, argument, url, values);
  } catch (error) {
    // A refused change is recorded too: who tried what, and why it was refused.
    const attempted = CHANGES[command];
    if (attempted && error instanceof CommandError) {
      await service.ctx.audit.record({
        action: attempted,
        outcome: "failure",
        actor: { kind: "admin", id: operatorNameOf(values.operator) },
        accountId: null,
        detail: { command, reason: error.message.slice(0, 200) },
      });
    }
    throw error;
  }
}

async function runCommand(
  service: IdentityService,
  command: string,
  argument: string | undefined,
  url: string | undefined,
  values: AdminValues,
): Promise<void> {
  const ctx = { ...service.ctx, operatorName: operatorNameOf(values.operator) };
  const required = (what: string) => {
    if (!argument) throw new UsageError(`Missing ${what}`);
    return argument;
  };
  const accountId = async (email: string) => {
    const found = await findAccountByEmail(ctx, email);
    if (found.ok) return found.account.id;
    if (found.code === "INVALID_EMAIL") throw new CommandError(found.reason);
    throw new CommandError(`No account for ${email}; create it with: accounts create <email>`);
  };
  const createKey = async (kind: KeyKind, ownerId: string) => {
    const issued = await issueKey(ctx, kind, ownerId, values.name ?? "default");
    if (!issued.ok) throw new CommandError("Key name must be 1 to 100 characters");
    await recordAdminKeyChange(ctx, kind, "create", issued.record.id);
    print(values, issued.key, { id: issued.record.id, key: issued.key, name: issued.record.name });
  };
  const revoke = async (kind: KeyKind) => {
    const result = await revokeKey(ctx, kind, required("key id"));
    if (!result.ok && result.code === "KEY_NOT_FOUND") throw new CommandError("No such key");
    if (result.ok) await recordAdminKeyChange(ctx, kind, "revoke", required("key id"));
    say(result.ok ? "revoked" : "already revoked");
  };

  // The commands on accounts and partners as a whole: the operator's listings and records.
  const verb = command.split(" ")[1];
  const operator = () => ({ ...ctx, operator: createOperatorStore(service.database) });
  const listing = { json: values.json ?? false, limit: values.limit };

  const refuseKeysFromEnv = () => {
    if (ctx.sealingKeys.source === "env") throw new CommandError(KEY_CHANGE_REFUSED.KEYS_FROM_ENV);
  };

  switch (command) {
    case "accounts create": {
      const created = await createAccount(ctx, required("email"));
      if (created.ok) {
        const { id } = created.account;
        const subject = { kind: "account", id };
        await recordAdminAction(ctx, { action: "account.create", accountId: id, subject });
        return print(values, created.account.id, created.account);
      }
      if (created.code === "INVALID_EMAIL") throw new CommandError(created.reason);
      throw new CommandError("An account with this email already exists");
    }
    case "accounts list":
    case "accounts show":
    case "accounts export":
    case "accounts delete":
      return answer(
        await runAccountsCommand(operator(), verb as AccountsAction, argument, listing),
      );
    case "partners list":
    case "partners suspend":
    case "partners reinstate":
    case "partners delete":
      return answer(
        await runPartnersCommand(operator(), verb as PartnersAction, argument, listing),
      );
    case "user-keys create":
      return createKey("user", await accountId(required("email")));
    case "user-keys list":
      return printKeys(values, await listKeys(ctx, "user", await accountId(required("email"))));
    case "user-keys revoke":
      return revoke("user");
    case "partners create": {
      if (argument) throw new UsageError(`Unexpected argument: ${argument}`);
      if (!values.name || !values.owner)
        throw new UsageError("partners create needs --name and --owner");
      const created = await createPartner(ctx, {
        ownerAccountId: await accountId(values.owner),
        name: values.name,
        website: values.website,
        description: values.description,
        listed: values.listed,
      });
      if (!created.ok) throw new CommandError(created.reason);
      const { id, ownerAccountId, name } = created.partner;
      await recordAdminAction(ctx, {
        action: "partner.create",
        accountId: ownerAccountId,
        subject: { kind: "partner", id },
        detail: { name },
      });
      return print(values, created.partner.id, created.partner);
    }
    case "partner-keys create": {
      const partnerId = required("partner id");
      if (!(await ctx.store.findPartner(partnerId))) throw new CommandError("No such partner");
      return createKey("partner", partnerId);
    }
    case "partner-keys list":
      return printKeys(values, await listKeys(ctx, "partner", required("partner id")));
    case "partner-keys revoke":
      return revoke("partner");
    case "partner-resources add":
    case "partner-resources list":
    case "partner-resources remove": {
      const action = command.split(" ")[1] as PartnerResourcesAction;
      const partnerId = required("partner id");
      if (action !== "list" && !url) throw new UsageError("Missing resource URL");
      const answer = await runPartnerResourcesCommand(ctx, action, partnerId, url, {
        json: values.json ?? false,
      });
      if (!answer.ok) throw new CommandError(answer.error);
      if (action !== "list") {
        await recordAdminAction(ctx, {
          action: `partner_resource.${action}`,
          accountId: (await ctx.store.findPartner(partnerId))?.ownerAccountId ?? null,
          subject: { kind: "partner", id: partnerId },
          detail: { url: url ?? null },
        });
      }
      if (answer.output) say(answer.output);
      return;
    }
    case "sealing-keys list":
      return printSealingKeys(values, ctx.sealingKeys.list());
    case "sealing-keys rotate": {
      refuseKeysFromEnv();
      await refuseWhileAnotherSecretServes(service);
      const rotated = await ctx.sealingKeys.rotate();
      if (!rotated.ok) throw new CommandError(KEY_CHANGE_REFUSED[rotated.code]);
      const subject = { kind: "sealing_key", id: rotated.id };
      await recordAdminAction(ctx, { action: "sealing_key.rotate", accountId: null, subject });
      return print(values, rotated.id, { id: rotated.id });
    }
    case "sealing-keys rewrap": {
      refuseKeysFromEnv();
      const rewrapped = await ctx.sealingKeys.rewrap(await readNewSecret());
      if (!rewrapped.ok) throw new CommandError(KEY_CHANGE_REFUSED[rewrapped.code]);
      await recordAdminAction(ctx, {
        action: "sealing_key.rewrap",
        accountId: null,
        detail: { count: rewrapped.count },
      });
      const where = rewrapped.secretFile
        ? `${rewrapped.secretFile} now holds the new secret; restart every instance that reads it.`
        : "Set AGENTPASS_SECRET to the new secret on every instance, and restart them.";
      return void say(`Rewrapped ${rewrapped.count} sealing keys. ${where}`);
    }
    case "audit": {
      const answer = await runAuditCommand(ctx, values);
      if (!answer.ok) throw new CommandError(answer.error);
      if (answer.output) say(answer.output);
      return;
    }
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}

/**
 * Prints one answer on stdout, every control character escaped: names, emails and user agents
 * in it may be any client's text, which must not drive the operator's terminal.
 */
function say(text: string): void {
  console.log(terminalText(text));
}

function print(values: AdminValues, plain: string, object: object): void {
  say(values.json ? JSON.stringify(object) : plain);
}

function printKeys(
  values: AdminValues,
  keys: {
    id: string;
    name: string;
    displayPrefix: string;
    createdAt: number;
    lastUsedAt: number | null;
    revokedAt: number | null;
  }[],
): void {
  const rows = keys.map((key) => ({
    id: key.id,
    name: key.name,
    prefix: key.displayPrefix,
    createdAt: new Date(key.createdAt).toISOString(),
    lastUsedAt: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
    revokedAt: key.revokedAt === null ? null : new Date(key.revokedAt).toISOString(),
  }));
  if (values.json) return void say(JSON.stringify(rows));
  for (const row of rows) {
    const state = row.revokedAt ? `revoked ${row.revokedAt}` : "active";
    say(`${row.id}  ${row.prefix}…  ${row.name}  created ${row.createdAt}  ${state}`);
  }
}

/** Prints a command's answer, or refuses with its error. */
function answer(result: CommandAnswer): void {
  if (!result.ok) throw new CommandError(result.error);
  if (result.output) say(result.output);
}

/** The commands that change something, by the action they record (a refusal included). */
const CHANGES: Record<string, AuditAction> = {
  "accounts create": "account.create",
  "accounts export": "account.export",
  "accounts delete": "account.delete",
  "user-keys create": "user_key.create",
  "user-keys revoke": "user_key.revoke",
  "partners create": "partner.create",
  "partners suspend": "partner.suspend",
  "partners reinstate": "partner.reinstate",
  "partners delete": "partner.delete",
  "partner-keys create": "partner_key.create",
  "partner-keys revoke": "partner_key.revoke",
  "partner-resources add": "partner_resource.add",
  "partner-resources remove": "partner_resource.remove",
  "sealing-keys rotate": "sealing_key.rotate",
  "sealing-keys rewrap": "sealing_key.rewrap",
};

const KEY_CHANGE_REFUSED = {
  KEYS_FROM_ENV: "Sealing keys come from TOKEN_KEYS, not the database: change them there",
  KEYS_CHANGED: "The sealing keys changed while this ran (another rotate or rewrap); run it again",
};

function printSealingKeys(values: AdminValues, keys: SealingKeyInfo[]): void {
  const iso = (time: number | null) => (time === null ? null : new Date(time).toISOString());
  const rows = keys.map((key) => ({
    id: key.id,
    createdAt: iso(key.createdAt),
    sealing: key.sealing,
    retiredAt: iso(key.retiredAt),
  }));
  if (values.json) return void say(JSON.stringify(rows));
  for (const row of rows) {
    const created = row.createdAt ? `created ${row.createdAt}` : "from TOKEN_KEYS";
    const state = row.sealing
      ? "seals new tokens"
      : row.retiredAt
        ? `retired ${row.retiredAt}`
        : "opens tokens";
    say(`${row.id}  ${created}  ${state}`);
  }
}

/**
 * A rotation adds a key wrapped under this command's secret: an instance running under another
 * one cannot unwrap it and refuses every token it seals. So rotate waits until every instance
 * seen in the last `INSTANCE_SEEN_MS` runs under this secret (docs/operations.md).
 */
async function refuseWhileAnotherSecretServes(service: IdentityService): Promise<void> {
  const since = service.ctx.clock() - INSTANCE_SEEN_MS;
  const others = await service.instances.underAnotherSecret(service.secretCheck, since);
  const [latest] = others;
  if (!latest) return;
  throw new CommandError(
    `${others.length} running instance(s) use another secret than this command (last seen ${new Date(latest.seenAt).toISOString()}): restart every instance with the secret this command runs under, wait until each answers /readyz 200, then rotate`,
  );
}

/** The new secret of `rewrap`, from stdin: never from the command line, where `ps` shows it. */
async function readNewSecret(): Promise<string> {
  if (process.stdin.isTTY)
    process.stderr.write("New secret (at least 32 characters), then Ctrl-D: ");
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const secret = Buffer.concat(chunks).toString("utf8").trim();
  if (!SecretSchema.safeParse(secret).success) {
    throw new CommandError("The new secret (read from stdin) must be at least 32 characters");
  }
  return secret;
}
