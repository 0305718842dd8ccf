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
  options.tell(`To log in, open ${code.verification_uri} and enter the code ${code.user_code}`);
  options.tell(`(or open ${code.verification_uri_complete})`);
  if (options.openBrowser) tryOpen(code.verification_uri_complete ?? "");
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

/** Opens `url` in the default browser when there is one to open; never fails the login. */
function tryOpen(url: string): void {
  const [command, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", '""', url]]
        : process.env.DISPLAY || process.env.WAYLAND_DISPLAY
          ? ["xdg-open", [url]]
          : [undefined, []];
  if (!command) return;
  try {
    const child = spawn(command, args as string[], { stdio: "ignore", detached: true });
    child.on("error", () => {});
    child.unref();
  } catch {
    // No browser: the URL is on the screen.
  }
}
