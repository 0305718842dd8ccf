#!/usr/bin/env node
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { backupDatabase, isSchemaBehind } from "@agentpass/db";
import { startServer, startTelemetry, stopOnSignals, terminalText } from "@agentpass/http";
import { canonicalizeEmail } from "@agentpass/verify";
import pino from "pino";
import { loadNotesConfig, type NotesConfig } from "./config.ts";
import { migrateNotesDatabase, openNotesDatabase, openNotesService } from "./service.ts";

const USAGE = `agentpass-notes — the AgentPass reference notes API

Usage:
  agentpass-notes serve
  agentpass-notes migrate
  agentpass-notes backup <file>
  agentpass-notes users add <email>
  agentpass-notes users list [--json]
  agentpass-notes users remove <email> [--yes]

serve applies missing migrations at start unless MIGRATE_ON_START=false; migrate applies them
alone, as a deploy's step. users never migrates: it refuses a database that lacks a migration.
backup writes a consistent copy of a SQLite database to <file> while the service runs
(PostgreSQL: pg_dump).
Configuration comes from the environment (PORT, DATA_DIR, DATABASE_URL, AGENTPASS_URL,
AGENTPASS_PARTNER_KEY, ...); see docs/operations.md.`;

class UsageError extends Error {}
class CommandError extends Error {}

const VERSION = "0.1.0";

const options = {
  yes: { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options });
  } catch (error) {
    // Node's parser text ("To specify a positional argument starting with a '-'…") helps nobody.
    const option = /option '([^']+)'/.exec((error as Error).message)?.[1];
    throw new UsageError(option ? `Unknown option: ${option}` : (error as Error).message);
  }
  const { values, positionals } = parsed;
  const [group, action, argument, ...extra] = positionals;
  if (values.version) return void console.log(VERSION);
  if (values.help || !group) return void console.log(USAGE);
  if (group === "users" && !action) {
    return void console.log(
      USAGE.split("\n")
        .filter((line) => line.includes(" users "))
        .join("\n"),
    );
  }
  if (extra.length > 0) throw new UsageError(`Unexpected argument: ${extra[0]}`);
  const loaded = loadNotesConfig();
  if (!loaded.ok) throw new CommandError(loaded.error);
  for (const warning of loaded.warnings) console.error(`agentpass-notes: warning: ${warning}`);
  if (group === "serve") return serve(loaded.config);
  if (group === "migrate") {
    if (action) throw new UsageError(`Unexpected argument: ${action}`);
    return migrate(loaded.config);
  }
  if (group === "backup") {
    if (!action) throw new UsageError("Missing file: agentpass-notes backup <file>");
    if (argument) throw new UsageError(`Unexpected argument: ${argument}`);
    return backup(loaded.config, action);
  }
  if (group !== "users") throw new UsageError(`Unknown command: ${group}`);

  const service = await openNotesService(
    { ...loaded.config, migrateOnStart: false },
    { logger: pino({ level: "silent" }) },
  );
  const { store } = service.ctx;
  try {
    if (action === "list") {
      const users = await store.listUsers();
      if (values.json)
        return void console.log(
          terminalText(JSON.stringify(users.map(({ id, email }) => ({ id, email })))),
        );
      for (const user of users) console.log(terminalText(`${user.email}  ${user.id}`));
      return;
    }
    if (action !== "add" && action !== "remove")
      throw new UsageError(`Unknown command: users ${action ?? ""}`);
    if (!argument) throw new UsageError("Missing email");
    const email = canonicalizeEmail(argument);
    if (!email.ok) throw new CommandError(email.reason);
    if (action === "add") {
      const user = await store.addUser(email.email, Date.now());
      if (!user) throw new CommandError(`A user with email ${email.email} already exists`);
      return void console.log(user.id);
    }
    if (!(await store.findUserByEmail(email.email)))
      throw new CommandError(`No user ${email.email}`);
    if (
      !values.yes &&
      !(await confirm(`Delete ${email.email} with all their notes and tags? [y/N] `))
    ) {
      throw new CommandError("Cancelled; nothing was deleted");
    }
    await store.removeUser(email.email);
    console.log(terminalText(`removed ${email.email}`));
  } finally {
    await service.close();
  }
}

/** `backup <file>`: a consistent copy of the running service's SQLite database. */
async function backup(config: NotesConfig, file: string): Promise<void> {
  const database = openNotesDatabase(config, { readerThreads: 0 });
  try {
    console.log((await backupDatabase(database, file)).file);
  } catch (error) {
    throw new CommandError(`Cannot back up: ${(error as Error).message}`);
  } finally {
    await database.close();
  }
}

async function migrate(config: NotesConfig): Promise<void> {
  const { applied, unknown } = await migrateNotesDatabase(config);
  console.log(
    applied.length > 0 ? `Applied ${applied.join(", ")}` : "The database schema is up to date",
  );
  if (unknown.length > 0) {
    console.log(`Applied by a newer release, left as they are: ${unknown.join(", ")}`);
  }
}

async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  const answer = await prompt.question(question);
  prompt.close();
  return /^y(es)?$/i.test(answer.trim());
}

async function serve(config: NotesConfig): Promise<void> {
  // OpenTelemetry when the standard OTEL_* variables ask for it (docs/operations.md).
  const telemetry = startTelemetry("agentpass-notes");
  const service = await openNotesService(config, telemetry ? { tracer: telemetry.tracer } : {});
  const server = await startServer(service, {
    port: config.port,
    host: config.host,
    drainMs: config.shutdownDrainMs,
  });
  service.logger.info({ url: server.url, agentpass: config.agentpassUrl }, "notes API listening");
  stopOnSignals(server, {
    drainMs: config.shutdownDrainMs,
    logger: service.logger,
    ...(telemetry && { beforeExit: () => telemetry.shutdown() }),
  });
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`agentpass-notes: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  const known = error instanceof CommandError || isSchemaBehind(error);
  console.error(`agentpass-notes: ${known ? error.message : String(error)}`);
  process.exit(1);
});
