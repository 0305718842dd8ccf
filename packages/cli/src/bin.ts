#!/usr/bin/env node
import { parseArgs } from "node:util";
import * as commands from "./commands.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import { openProfiles } from "./profiles.ts";

const VERSION = "0.1.0";
const DEFAULT_URL = "https://agentpass.dev";

const HELP: Record<string, string> = {
  main: `agentpass — your AgentPass identity, for agents

Usage: agentpass <command> [options]

Commands:
  login     save your user key (asked for, or read from stdin with --with-key)
  token     print a session token for the x-session-token header
  status    show the server, your key's prefix, and whether it works
  logout    forget the saved key and tokens

Options for every command:
  --url <url>   AgentPass server (default: $AGENTPASS_URL or ${DEFAULT_URL})
  -h, --help    help for a command
  --version     print the version

Exit codes: 0 ok, 1 error, 2 usage, 3 not logged in, 4 key rejected, 5 server unreachable.`,
  login: `agentpass login [--with-key] [--url <url>]

Saves your user key (apu_…) for the server, after checking that it works.
Without --with-key, asks for it on the terminal (hidden). With --with-key, reads it from stdin:
  agentpass login --with-key < key.txt
The key is never accepted as an argument, so it never shows in process lists.`,
  token: `agentpass token [--fresh] [--audience <partner id>] [--json] [--url <url>]

Prints a session token alone on stdout:
  curl -H "x-session-token: $(agentpass token)" https://partner.example/api/…
Reuses a cached token while it has more than 60 s left, else mints a new one.
  --fresh       always mint a new token
  --audience    mint a token only that partner can verify
  --json        print { "sessionToken", "expiresAt" }`,
  status: `agentpass status [--url <url>]

Shows the server, your key's prefix, and mints a token to check that the key works.`,
  logout: `agentpass logout [--url <url>]

Deletes the saved key and cached tokens for the server.`,
};

const options = {
  url: { type: "string" },
  "with-key": { type: "boolean" },
  fresh: { type: "boolean" },
  audience: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (error) {
    throw new CliError(EXIT.USAGE, (error as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.version) return void console.log(VERSION);
  if (!command || command === "help") return void console.log(HELP.main);
  const help = HELP[command];
  if (!help || command === "main") {
    throw new CliError(EXIT.USAGE, `Unknown command: ${command}. Run: agentpass --help`);
  }
  if (values.help) return void console.log(help);
  if (rest.length > 0) throw new CliError(EXIT.USAGE, `Unexpected argument: ${rest[0]}`);

  const ctx: commands.CommandContext = {
    url: serverUrl(values.url ?? process.env.AGENTPASS_URL ?? DEFAULT_URL),
    profiles: openProfiles(),
    out: (line) => console.log(line),
    minTtlSeconds: Number(process.env.AGENTPASS_TOKEN_MIN_TTL_SECONDS ?? 60),
    now: Date.now,
  };
  switch (command) {
    case "login":
      return commands.login(ctx, { withKey: values["with-key"] ?? false });
    case "token":
      return commands.token(ctx, {
        fresh: values.fresh ?? false,
        json: values.json ?? false,
        audience: values.audience,
      });
    case "status":
      return commands.status(ctx);
    case "logout":
      return commands.logout(ctx);
  }
}

function serverUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(EXIT.USAGE, `Not a URL: ${value}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new CliError(EXIT.USAGE, `Not an http(s) URL: ${value}`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

main(process.argv.slice(2)).then(
  () => process.exit(EXIT.OK),
  (error: unknown) => {
    if (error instanceof CliError) {
      console.error(`agentpass: ${error.message}`);
      process.exit(error.exitCode);
    }
    console.error(`agentpass: unexpected error: ${(error as Error)?.message ?? String(error)}`);
    process.exit(EXIT.ERROR);
  },
);
