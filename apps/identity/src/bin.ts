#!/usr/bin/env node
import { parseArgs } from "node:util";
import { isSchemaBehind } from "@agentpass/db";
import { startServer, startTelemetry, stopOnSignals, terminalText } from "@agentpass/http";
import { CommandError, runAdminCommand, UsageError } from "./admin-command.ts";
import { operatorNameOf } from "./audit-command.ts";
import { runBackupCommand } from "./backup-command.ts";
import { loadConfig } from "./config.ts";
import { createLogger } from "./infra/logger.ts";
import { runPartnerProvisionCommand } from "./partner-provision-command.ts";
import { migrateIdentityDatabase, openIdentityService } from "./service.ts";

const USAGE = `agentpass-server — run and administer the AgentPass identity service

Usage:
  agentpass-server serve
  agentpass-server migrate
  agentpass-server backup <file>
  agentpass-server accounts create <email> [--json]
  agentpass-server accounts list [--limit N] [--json]
  agentpass-server accounts show <email> [--json]
  agentpass-server accounts export <email>
  agentpass-server accounts delete <email>
  agentpass-server user-keys create <email> [--name N] [--json]
  agentpass-server user-keys list <email> [--json]
  agentpass-server user-keys revoke <id>
  agentpass-server partners create --name N --owner <email> [--website URL] [--description D] [--listed] [--json]
  agentpass-server partners list [--limit N] [--json]
  agentpass-server partners provision --name N --owner <email> --key-file <path>
  agentpass-server partners suspend <partnerId>
  agentpass-server partners reinstate <partnerId>
  agentpass-server partners delete <partnerId>
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
change something record themselves there, refused or done, by the operator named with
--operator <name> (or AGENTPASS_OPERATOR; unset, the system user). accounts export writes everything
the service holds about a person as JSON; accounts delete deletes it as its owner can. A
suspended partner's keys are refused (403) until it is reinstated. partners provision, a
deploy's step, keeps the key in --key-file if it works, else makes the account, the partner and a
key as needed and writes the key there.
Configuration comes from the environment (PORT, DATA_DIR, DATABASE_URL, ...); see docs/operations.md.`;

/** The commands whose second argument is a URL. */
const TAKES_URL = new Set(["partner-resources add", "partner-resources remove"]);

const options = {
  json: { type: "boolean" },
  name: { type: "string" },
  owner: { type: "string" },
  "key-file": { type: "string" },
  website: { type: "string" },
  description: { type: "string" },
  listed: { type: "boolean" },
  account: { type: "string" },
  action: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  limit: { type: "string" },
  operator: { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

const VERSION = "0.1.0";

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
    return void console.log(terminalText(answer.output));
  }

  // Admin commands never migrate (a deploy's migrate step does), and log to stderr: stdout is
  // their answer.
  const service = await openIdentityService(
    { ...loaded.config, migrateOnStart: false },
    { logger: createLogger(loaded.config.logLevel, "stderr") },
  );
  try {
    // The name the audit log attributes the command to: --operator, else AGENTPASS_OPERATOR.
    const operator = values.operator ?? loaded.config.operator;
    const command = `${group} ${action ?? ""}`.trim();
    if (command === "partners provision") {
      if (argument) throw new UsageError(`Unexpected argument: ${argument}`);
      const answer = await runPartnerProvisionCommand(
        { ...service.ctx, operatorName: operatorNameOf(operator) },
        { name: values.name, owner: values.owner, keyFile: values["key-file"] },
      );
      if (!answer.ok) throw new CommandError(answer.error);
      return void console.log(terminalText(answer.output));
    }
    await runAdminCommand(service, command, argument, url, { ...values, operator });
  } finally {
    await service.close();
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
  // OpenTelemetry when the standard OTEL_* variables ask for it (docs/operations.md).
  const telemetry = startTelemetry("agentpass-identity");
  const service = await openIdentityService(config, {
    announce: true,
    ...(telemetry && { tracer: telemetry.tracer }),
  });
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
  stopOnSignals(server, {
    drainMs: config.shutdownDrainMs,
    logger: service.logger,
    ...(telemetry && { beforeExit: () => telemetry.shutdown() }),
  });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`agentpass-server: ${terminalText(error.message)}\n\n${USAGE}`);
    process.exit(2);
  }
  const known = error instanceof CommandError || isSchemaBehind(error);
  console.error(`agentpass-server: ${terminalText(known ? error.message : String(error))}`);
  process.exit(1);
});
