#!/usr/bin/env node
import { parseArgs } from "node:util";
import * as agentCommands from "./agent-commands.ts";
import * as commands from "./commands.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import type { TokenTarget } from "./mint.ts";
import { openProfiles } from "./profiles.ts";
import { chooseServerUrl } from "./server-url.ts";
import { printable } from "./terminal-text.ts";

const VERSION = "0.1.0";

const HELP: Record<string, string> = {
  main: `agentpass — your AgentPass identity, for agents

Usage: agentpass <command> [options]

Commands:
  login     log in through the browser, or save a user key with --with-key
  token     print a session token for the x-session-token header
  headers   print the two header lines of one request with a key-bound token (DPoP)
  agents    add, list or revoke your agents: each its own key and name, seen by partners
  status    show the server, your key's prefix, and whether it works
  logout    revoke the saved key and forget it and the tokens

Options for every command:
  --url <url>   AgentPass server (default: $AGENTPASS_URL, else the one server you
                logged in to; there is no built-in server)
  -h, --help    help for a command
  --version     print the version

Exit codes: 0 ok, 1 error, 2 usage, 3 not logged in, 4 key rejected, 5 server unreachable.`,
  login: `agentpass login [--with-key] [--no-browser] [--url <url>]

Without --with-key: shows a code and a URL and opens your browser; sign in there and approve,
and a new user key for this machine is saved (the OAuth device flow of RFC 8628, client
agentpass-cli).
  --no-browser  only print the URL, do not try to open a browser
With --with-key: saves a user key (apu_…) you already have, read from stdin, or asked for on
the terminal (hidden), once a test mint says it works:
  agentpass login --with-key < key.txt
The key is never accepted as an argument, so it never shows in process lists. A key already
saved for the server is named before the login starts, and revoked on the server once the new
key is saved (run agentpass logout --local first to keep it working).`,
  token: `agentpass token [--fresh] [--dpop] [--agent <name>] [--audience <partner id> | --resource <url>] [--json] [--url <url>]

Prints a session token alone on stdout:
  curl -H "x-session-token: $(agentpass token)" https://partner.example/api/…
Reuses a cached token while it has more than 60 s left, else mints a new one (OAuth refresh
grant: the user key is the refresh token).
  --fresh       always mint a new token
  --dpop        mint a token bound to this login's key (DPoP, RFC 9449): it is sent as
                Authorization: DPoP with a proof of the key per request (agentpass headers)
  --audience    mint a token only that partner can verify (by partner id)
  --resource    mint a token only the partner that registered this URL can verify (RFC 8707)
  --agent       mint as that agent (agentpass agents add): partners see which agent acts
  --json        print { "sessionToken", "expiresAt" } (and "tokenType": "DPoP" with --dpop)`,
  headers: `agentpass headers <METHOD> <URL> [--fresh] [--agent <name>] [--audience <partner id> | --resource <url>] [--url <url>]

Prints the two header lines of one request with a token bound to this login's key (DPoP,
RFC 9449): the token, and a proof the key signs now for this method and URL and this token.
  Authorization: DPoP aps_…
  DPoP: eyJ…
A proof is accepted once: run it for every request.
  curl -H @<(agentpass headers GET https://partner.example/api/notes) https://partner.example/api/notes
The URL's query is left out of the proof. The token is the one agentpass token --dpop prints,
with the same --fresh, --agent, --audience and --resource.`,
  agents: `agentpass agents add <name> | list [--json] | revoke <name> [--url <url>]

Your agents, each with its own key (kept here, in credentials.json) under this machine's host
key: partners learn which agent acts for you, and you revoke one without the others.
  add <name>     register an agent; approve it in the browser with the code shown, at <url>/device
  list           each saved agent, its id and its state on the server
  revoke <name>  revoke it on the server (it stops at once, everywhere) and forget it here
Then: agentpass token --agent <name>, agentpass headers --agent <name> GET <url>.`,
  status: `agentpass status [--url <url>]

Shows the server, your key's prefix, and mints a token to check that the key works.`,
  logout: `agentpass logout [--local] [--url <url>]

Revokes the saved key on the server (RFC 7009): it and every token made from it stop working.
Then deletes the saved key and cached tokens for the server, even when the server cannot be
reached (exit 5: the key is still live; revoke it in the dashboard, at <url>/keys).
  --local       only delete them here: the key keeps working until you revoke it`,
};

const options = {
  url: { type: "string" },
  "with-key": { type: "boolean" },
  "no-browser": { type: "boolean" },
  fresh: { type: "boolean" },
  dpop: { type: "boolean" },
  agent: { type: "string" },
  audience: { type: "string" },
  resource: { type: "string" },
  local: { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

async function main(argv: string[]): Promise<void> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true });
  } catch (error) {
    // Node's parser text ("To specify a positional argument starting with a '-'…") helps nobody.
    const option = /option '([^']+)'/.exec((error as Error).message)?.[1] ?? "";
    const command = argv.find((arg) => !arg.startsWith("-")) ?? "main";
    throw new CliError(EXIT.USAGE, `Unknown option: ${option}\n\n${HELP[command] ?? HELP.main}`);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.version) return void console.log(VERSION);
  if (!command || command === "help") return void console.log(HELP.main);
  const help = HELP[command];
  if (!help || command === "main") {
    throw new CliError(EXIT.USAGE, `Unknown command: ${command}\n\n${HELP.main}`);
  }
  if (values.help) return void console.log(help);
  // `headers` takes its method and URL, `agents` its action and name; no other an argument.
  if (command !== "headers" && command !== "agents" && rest.length > 0) {
    throw new CliError(EXIT.USAGE, `Unexpected argument: ${rest[0]}`);
  }

  const profiles = openProfiles();
  const ctx: commands.CommandContext = {
    // An empty AGENTPASS_URL is unset; an empty --url is a usage error.
    url: chooseServerUrl(
      values.url ?? (process.env.AGENTPASS_URL || undefined),
      profiles.savedUrls(),
    ),
    profiles,
    out: (line) => console.log(line),
    tell: (line) => console.error(line),
    minTtlSeconds: Number(process.env.AGENTPASS_TOKEN_MIN_TTL_SECONDS ?? 60),
    now: Date.now,
  };
  switch (command) {
    case "login":
      return commands.login(ctx, {
        withKey: values["with-key"] ?? false,
        openBrowser: !(values["no-browser"] ?? process.env.AGENTPASS_NO_BROWSER === "1"),
      });
    case "token":
      return commands.token(ctx, {
        fresh: values.fresh ?? false,
        json: values.json ?? false,
        target: tokenTarget(values.audience, values.resource),
        dpop: values.dpop ?? false,
        agent: values.agent,
      });
    case "headers":
      return commands.headers(ctx, {
        fresh: values.fresh ?? false,
        target: tokenTarget(values.audience, values.resource),
        agent: values.agent,
        ...requestOf(rest),
      });
    case "agents":
      return agents(ctx, rest, values.json ?? false);
    case "status":
      return commands.status(ctx);
    case "logout":
      return commands.logout(ctx, { local: values.local ?? false });
  }
}

/** `agents add <name>`, `agents list`, `agents revoke <name>`. */
function agents(ctx: commands.CommandContext, args: string[], json: boolean): Promise<void> {
  const [action, name, ...more] = args;
  if (more.length === 0 && action === "list" && name === undefined) {
    return agentCommands.listAgents(ctx, { json });
  }
  if (more.length === 0 && name !== undefined && action === "add") {
    return agentCommands.addAgent(ctx, { name });
  }
  if (more.length === 0 && name !== undefined && action === "revoke") {
    return agentCommands.revokeAgent(ctx, { name });
  }
  throw new CliError(EXIT.USAGE, `Give add <name>, list or revoke <name>\n\n${HELP.agents}`);
}

/** `headers`' arguments: an HTTP method (RFC 9110 token, upper-cased) and an http(s) URL. */
function requestOf(args: string[]): { method: string; url: string } {
  const [method, url, ...more] = args;
  if (method === undefined || url === undefined || more.length > 0) {
    throw new CliError(EXIT.USAGE, `Give a method and a URL\n\n${HELP.headers}`);
  }
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/.test(method)) {
    throw new CliError(EXIT.USAGE, `Not an HTTP method: ${printable(method, 40)}`);
  }
  const parsed = URL.canParse(url) ? new URL(url) : null;
  if (parsed?.protocol !== "https:" && parsed?.protocol !== "http:") {
    throw new CliError(EXIT.USAGE, `Not an http(s) URL: ${printable(url, 200)}`);
  }
  return { method: method.toUpperCase(), url: parsed.href };
}

function tokenTarget(audience: string | undefined, resource: string | undefined): TokenTarget {
  if (audience !== undefined && resource !== undefined) {
    throw new CliError(EXIT.USAGE, "Give --audience or --resource, not both");
  }
  if (audience !== undefined) return { audience };
  return resource === undefined ? null : { resource };
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
