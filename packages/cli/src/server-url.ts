import { CliError, EXIT } from "./exit-codes.ts";

/**
 * The AgentPass server a command talks to: `--url`, else `AGENTPASS_URL`, else the one server
 * the person logged in to. There is no built-in default: a URL nobody gave could belong to a
 * stranger, and the command would send the user key there.
 */
export function chooseServerUrl(given: string | undefined, savedUrls: string[]): string {
  if (given !== undefined) return normalizeServerUrl(given);
  if (savedUrls.length === 1) return savedUrls[0] as string;
  if (savedUrls.length === 0) {
    throw new CliError(EXIT.USAGE, "No AgentPass server: pass --url <url> or set AGENTPASS_URL");
  }
  throw new CliError(
    EXIT.USAGE,
    `Logged in to several AgentPass servers (${savedUrls.join(", ")}): pass --url <url> or set AGENTPASS_URL`,
  );
}

/** `value` as an http(s) origin and path without a trailing slash: the key of saved logins. */
function normalizeServerUrl(value: string): string {
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
