#!/usr/bin/env node
import { parseArgs } from "node:util";
import { startServer } from "@agentpass/http";
import { createAccount, findAccountByEmail } from "./accounts.ts";
import { loadConfig } from "./config.ts";
import { issueKey, listKeys, revokeKey } from "./credentials.ts";
import type { KeyKind } from "./keys.ts";
import { createPartner } from "./partners.ts";
import { type IdentityService, openIdentityService } from "./service.ts";

const USAGE = `agentpass-server — run and administer the AgentPass identity service

Usage:
  agentpass-server serve
  agentpass-server accounts create <email> [--json]
  agentpass-server user-keys create <email> [--name N] [--json]
  agentpass-server user-keys list <email> [--json]
  agentpass-server user-keys revoke <id>
  agentpass-server partners create --name N --owner <email> [--website URL] [--description D] [--listed] [--json]
  agentpass-server partner-keys create <partnerId> [--name N] [--json]
  agentpass-server partner-keys list <partnerId> [--json]
  agentpass-server partner-keys revoke <id>

A create prints the new secret (or id) alone on stdout; with --json, one JSON object.
Configuration comes from the environment (PORT, DATA_DIR, DATABASE_URL, ...); see the README.`;

class UsageError extends Error {}
class CommandError extends Error {}

const options = {
  json: { type: "boolean" },
  name: { type: "string" },
  owner: { type: "string" },
  website: { type: "string" },
  description: { type: "string" },
  listed: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>["values"];

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true });
  const [group, action, argument, ...extra] = positionals;
  if (values.help || !group) return void console.log(USAGE);
  if (extra.length > 0) throw new UsageError(`Unexpected argument: ${extra[0]}`);
  const loaded = loadConfig();
  if (!loaded.ok) throw new CommandError(loaded.error);
  if (group === "serve") return serveForever(loaded.config);

  const service = await openIdentityService(loaded.config, {});
  try {
    await runAdminCommand(service, `${group} ${action ?? ""}`.trim(), argument, values);
  } finally {
    await service.close();
  }
}

async function runAdminCommand(
  { ctx }: IdentityService,
  command: string,
  argument: string | undefined,
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
    print(values, issued.key, { id: issued.record.id, key: issued.key, name: issued.record.name });
  };
  const revoke = async (kind: KeyKind) => {
    const result = await revokeKey(ctx, kind, required("key id"));
    if (!result.ok && result.code === "KEY_NOT_FOUND") throw new CommandError("No such key");
    console.log(result.ok ? "revoked" : "already revoked");
  };

  switch (command) {
    case "accounts create": {
      const created = await createAccount(ctx, required("email"));
      if (created.ok) return print(values, created.account.id, created.account);
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
    default:
      throw new UsageError(`Unknown command: ${command}`);
  }
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

async function serveForever(config: Parameters<typeof openIdentityService>[0]): Promise<void> {
  const service = await openIdentityService(config);
  const server = await startServer(service, { port: config.port, host: config.host });
  service.logger.info(
    { url: server.url, engine: config.databaseUrl ? "postgres" : "sqlite" },
    "identity service listening",
  );
  const stop = () => {
    service.logger.info("shutting down");
    server.close().then(() => process.exit(0));
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (
    error instanceof UsageError ||
    (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
  ) {
    console.error(
      `agentpass-server: ${(error as Error).message}\nRun agentpass-server --help for usage.`,
    );
    process.exit(2);
  }
  console.error(
    `agentpass-server: ${error instanceof CommandError ? error.message : String(error)}`,
  );
  process.exit(1);
});
