#!/usr/bin/env node
import { parseArgs } from "node:util";
import { isSchemaBehind } from "@agentpass/db";
import { startServer } from "@agentpass/http";
import { recordAdminAction, recordAdminKeyChange, runAuditCommand } from "./audit-command.ts";
import { runBackupCommand } from "./backup-command.ts";
import { loadConfig, SecretSchema } from "./config.ts";
import { createAccount, findAccountByEmail } from "./domain/accounts.ts";
import { issueKey, listKeys, revokeKey } from "./domain/credentials.ts";
import type { KeyKind } from "./domain/keys.ts";
import { createPartner } from "./domain/partners.ts";
import type { SealingKeyInfo } from "./domain/sealing-keys.ts";
import { createLogger } from "./infra/logger.ts";
import {
  type PartnerResourcesAction,
  runPartnerResourcesCommand,
} from "./partner-resources-command.ts";
import { type IdentityService, migrateIdentityDatabase, openIdentityService } from "./service.ts";

const USAGE = `agentpass-server — run and administer the AgentPass identity service

Usage:
  agentpass-server serve
  agentpass-server migrate
  agentpass-server backup <file>
  agentpass-server accounts create <email> [--json]
  agentpass-server user-keys create <email> [--name N] [--json]
  agentpass-server user-keys list <email> [--json]
  agentpass-server user-keys revoke <id>
  agentpass-server partners create --name N --owner <email> [--website URL] [--description D] [--listed] [--json]
  agentpass-server partner-keys create <partnerId> [--name N] [--json]
  agentpass-server partner-keys list <partnerId> [--json]
  agentpass-server partner-keys revoke <id>
  agentpass-server partner-resources add <partnerId> <url>
  agentpass-server partner-resources list <partnerId> [--json]
  agentpass-server partner-resources remove <partnerId> <url>
  agentpass-server sealing-keys list [--json]
  agentpass-server sealing-keys rotate [--json]
  agentpass-server sealing-keys rewrap < new-secret
  agentpass-server audit [--account <email>] [--action A] [--since ISO] [--until ISO] [--limit N] [--json]

serve applies missing migrations at start unless MIGRATE_ON_START=false; migrate applies them
alone, as a deploy's step. The other commands never migrate: they refuse a database that lacks
a migration of this release. backup writes a consistent copy of a SQLite database to <file>
while the service runs (PostgreSQL: pg_dump); a restore needs the same AGENTPASS_SECRET (or
DATA_DIR/identity.secret), which the copy does not hold.
A create prints the new secret (or id) alone on stdout; with --json, one JSON object.
Sealing keys seal session tokens; they are kept in the database, wrapped under AGENTPASS_SECRET
(or DATA_DIR/identity.secret). rotate adds a key that seals from then on (running instances take
it up on their next request; tokens of the old key keep working until they expire). rewrap reads
a new secret (at least 32 characters) from stdin and wraps every key under it.
audit prints the security events kept (newest first, 100 unless --limit); the commands that
change something record themselves there.
Configuration comes from the environment (PORT, DATA_DIR, DATABASE_URL, ...); see docs/operations.md.`;

/** The commands whose second argument is a URL. */
const TAKES_URL = new Set(["partner-resources add", "partner-resources remove"]);

class UsageError extends Error {}
class CommandError extends Error {}

const options = {
  json: { type: "boolean" },
  name: { type: "string" },
  owner: { type: "string" },
  website: { type: "string" },
  description: { type: "string" },
  listed: { type: "boolean" },
  account: { type: "string" },
  action: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  limit: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

const VERSION = "0.1.0";

type Values = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>["values"];

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (error) {
    throw new UsageError(parseErrorText(error as Error));
  }
  const { values, positionals } = parsed;
  const [group, action, argument, ...extra] = positionals;
  if (values.version) return void console.log(VERSION);
  if (values.help || !group) return void console.log(USAGE);
  const verbs = usageOf(group);
  if (verbs.length === 0) throw new UsageError(`Unknown command: ${group}`);
  if (!["serve", "migrate", "audit"].includes(group) && !action) {
    return void console.log(`agentpass-server ${group}: one of\n${verbs.join("\n")}`);
  }
  // Only the commands of a partner's resource URL take a second argument: the URL.
  const [url, ...unexpected] = TAKES_URL.has(`${group} ${action}`) ? extra : [undefined, ...extra];
  if (unexpected.length > 0) throw new UsageError(`Unexpected argument: ${unexpected[0]}`);
  const loaded = loadConfig();
  if (!loaded.ok) throw new CommandError(loaded.error);
  for (const warning of loaded.warnings) console.error(`agentpass-server: warning: ${warning}`);
  if (group === "serve") return serveForever(loaded.config);
  if (group === "migrate") {
    if (action) throw new UsageError(`Unexpected argument: ${action}`);
    return migrate(loaded.config);
  }
  if (group === "backup") {
    const answer = await runBackupCommand(loaded.config, action as string);
    if (!answer.ok) throw new CommandError(answer.error);
    return void console.log(answer.output);
  }

  // Admin commands never migrate (a deploy's migrate step does), and log to stderr: stdout is
  // their answer.
  const service = await openIdentityService(
    { ...loaded.config, migrateOnStart: false },
    { logger: createLogger(loaded.config.logLevel, "stderr") },
  );
  try {
    await runAdminCommand(service, `${group} ${action ?? ""}`.trim(), argument, url, values);
  } finally {
    await service.close();
  }
}

async function runAdminCommand(
  { ctx }: IdentityService,
  command: string,
  argument: string | undefined,
  url: string | undefined,
  values: Values,
): Promise<void> {
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
    console.log(result.ok ? "revoked" : "already revoked");
  };

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
      if (answer.output) console.log(answer.output);
      return;
    }
    case "sealing-keys list":
      return printSealingKeys(values, ctx.sealingKeys.list());
    case "sealing-keys rotate": {
      refuseKeysFromEnv();
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
      return void console.log(`Rewrapped ${rewrapped.count} sealing keys. ${where}`);
    }
    case "audit": {
      const answer = await runAuditCommand(ctx, values);
      if (!answer.ok) throw new CommandError(answer.error);
      if (answer.output) console.log(answer.output);
      return;
    }
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
}

/** The usage lines of one command group, such as `user-keys`. */
function usageOf(group: string): string[] {
  return USAGE.split("\n").filter(
    (line) =>
      line.startsWith(`  agentpass-server ${group} `) || line === `  agentpass-server ${group}`,
  );
}

/** Node's parser says "Unknown option '--x'. To specify a positional argument…": keep the gist. */
function parseErrorText(error: Error): string {
  const option = /option '([^']+)'/.exec(error.message)?.[1];
  return option ? `Unknown option: ${option}` : (error.message.split(". ")[0] ?? error.message);
}

function print(values: Values, plain: string, object: object): void {
  console.log(values.json ? JSON.stringify(object) : plain);
}

function printKeys(
  values: Values,
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
  if (values.json) return void console.log(JSON.stringify(rows));
  for (const row of rows) {
    const state = row.revokedAt ? `revoked ${row.revokedAt}` : "active";
    console.log(`${row.id}  ${row.prefix}…  ${row.name}  created ${row.createdAt}  ${state}`);
  }
}

const KEY_CHANGE_REFUSED = {
  KEYS_FROM_ENV: "Sealing keys come from TOKEN_KEYS, not the database: change them there",
  KEYS_CHANGED: "The sealing keys changed while this ran (another rotate or rewrap); run it again",
};

function printSealingKeys(values: Values, keys: SealingKeyInfo[]): void {
  const iso = (time: number | null) => (time === null ? null : new Date(time).toISOString());
  const rows = keys.map((key) => ({
    id: key.id,
    createdAt: iso(key.createdAt),
    sealing: key.sealing,
    retiredAt: iso(key.retiredAt),
  }));
  if (values.json) return void console.log(JSON.stringify(rows));
  for (const row of rows) {
    const created = row.createdAt ? `created ${row.createdAt}` : "from TOKEN_KEYS";
    const state = row.sealing
      ? "seals new tokens"
      : row.retiredAt
        ? `retired ${row.retiredAt}`
        : "opens tokens";
    console.log(`${row.id}  ${created}  ${state}`);
  }
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

async function migrate(config: Parameters<typeof migrateIdentityDatabase>[0]): Promise<void> {
  const { applied, unknown } = await migrateIdentityDatabase(config);
  console.log(
    applied.length > 0 ? `Applied ${applied.join(", ")}` : "The database schema is up to date",
  );
  if (unknown.length > 0) {
    console.log(`Applied by a newer release, left as they are: ${unknown.join(", ")}`);
  }
}

async function serveForever(config: Parameters<typeof openIdentityService>[0]): Promise<void> {
  const service = await openIdentityService(config);
  const server = await startServer(service, {
    port: config.port,
    host: config.host,
    maxConnections: config.maxConnections,
    drainMs: config.shutdownDrainMs,
  });
  service.logger.info(
    { url: server.url, engine: config.databaseUrl ? "postgres" : "sqlite" },
    "identity service listening",
  );
  const stop = () => {
    service.logger.info({ drainMs: config.shutdownDrainMs }, "shutting down");
    server.close().then(() => process.exit(0));
    // In-flight requests get 10 s once the drain ends.
    setTimeout(() => process.exit(1), config.shutdownDrainMs + 10_000).unref();
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`agentpass-server: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  const known = error instanceof CommandError || isSchemaBehind(error);
  console.error(`agentpass-server: ${known ? error.message : String(error)}`);
  process.exit(1);
});
