import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { CliError, EXIT } from "./exit-codes.ts";

const TIMEOUT_MS = 10_000;

interface DeviceCode {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

export interface DeviceLoginOptions {
  url: string;
  /** Where the instructions go (stderr: stdout stays clean for scripts). */
  tell: (line: string) => void;
  openBrowser: boolean;
}

/**
 * `agentpass login` through the browser (RFC 8628): shows a code and a URL, opens the browser
 * when it can, and polls until the person approves, denies, or the code expires. Resolves to
 * the new user key, created for this device and named after it.
 */
export async function loginWithBrowser(options: DeviceLoginOptions): Promise<string> {
  const started = (await post(options.url, "/api/device/code", {
    client_name: `agentpass on ${hostname()}`.slice(0, 100),
  })) as { status: number; body: Partial<DeviceCode> };
  const code = started.body;
  if (started.status !== 200 || !code.device_code || !code.user_code) {
    throw new CliError(EXIT.ERROR, `AgentPass could not start a login (HTTP ${started.status})`);
  }
  // The server's links reach the terminal and the browser only as URLs of the configured
  // service itself; any other is replaced by the service's own login page.
  const page = serviceUrl(options.url, code.verification_uri) ?? `${options.url}/device`;
  const direct = serviceUrl(options.url, code.verification_uri_complete);
  options.tell(`To log in, open ${page} and enter the code ${printable(code.user_code)}`);
  if (direct) options.tell(`(or open ${direct})`);
  if (options.openBrowser) tryOpen(direct ?? page);
  options.tell("Waiting for you to approve in the browser…");

  let interval = (code.interval ?? 5) * 1000;
  const deadline = Date.now() + (code.expires_in ?? 600) * 1000;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    const polled = await post(options.url, "/api/device/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: code.device_code,
    });
    const body = polled.body as { user_key?: unknown; error?: unknown };
    if (polled.status === 200 && typeof body.user_key === "string") return body.user_key;
    switch (body.error) {
      case "authorization_pending":
        continue;
      case "slow_down":
        interval += 5000; // RFC 8628 section 3.5
        continue;
      case "access_denied":
        throw new CliError(EXIT.ERROR, "The login was denied in the browser");
      case "expired_token":
        throw new CliError(EXIT.ERROR, "The code expired. Run: agentpass login");
      default:
        throw new CliError(EXIT.ERROR, `AgentPass refused the login (HTTP ${polled.status})`);
    }
  }
  throw new CliError(EXIT.ERROR, "The code expired. Run: agentpass login");
}

async function post(url: string, path: string, body: unknown) {
  try {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return { status: response.status, body: (await response.json().catch(() => ({}))) as unknown };
  } catch {
    throw new CliError(EXIT.UNREACHABLE, `Cannot reach AgentPass at ${url}`);
  }
}

/**
 * `candidate` as a normalized http(s) URL when it is on the same origin as the configured
 * service, else null: a compromised or impostor server cannot send the person, or the command
 * that opens the browser, anywhere else.
 */
export function serviceUrl(service: string, candidate: unknown): string | null {
  if (typeof candidate !== "string" || !URL.canParse(candidate) || !URL.canParse(service)) {
    return null;
  }
  const url = new URL(candidate);
  if (url.protocol !== "https:" && url.protocol !== "http:") return null;
  if (url.origin !== new URL(service).origin || url.username || url.password) return null;
  return url.href;
}

/** The program that opens `url` in the default browser here, run without any shell; or none. */
export function browserCommand(
  url: string,
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
): [command: string, args: string[]] | null {
  if (platform === "darwin") return ["open", [url]];
  // Not `cmd /c start`: cmd would parse the URL as a command line (`&`, `|`, `^`).
  if (platform === "win32") return ["rundll32.exe", ["url.dll,FileProtocolHandler", url]];
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return ["xdg-open", [url]];
  return null;
}

/** Opens `url` in the default browser when there is one to open; never fails the login. */
function tryOpen(url: string): void {
  const command = browserCommand(url);
  if (!command) return;
  try {
    const child = spawn(command[0], command[1], { stdio: "ignore", detached: true, shell: false });
    child.on("error", () => {});
    child.unref();
  } catch {
    // No browser: the URL is on the screen.
  }
}

/** A server's short string as it may reach a terminal: no control or bidi characters. */
function printable(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}]/gu, "").slice(0, 20);
}
