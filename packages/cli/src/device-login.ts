import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { CliError, EXIT } from "./exit-codes.ts";
import { type MintedToken, sessionTokenOf, unreachable } from "./mint.ts";
import { CLIENT_ID, postToService, reasonOf, retryWait } from "./service-request.ts";
import { printable } from "./terminal-text.ts";

const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

interface DeviceLoginOptions {
  url: string;
  /** Where the instructions go (stderr: stdout stays clean for scripts). */
  tell: (line: string) => void;
  openBrowser: boolean;
  now: () => number;
}

/**
 * `agentpass login` through the browser: the OAuth device authorization grant (RFC 8628) of the
 * pre-registered client `agentpass-cli`. Shows a code and a URL, opens the browser when it can,
 * and polls the token endpoint until the person approves, denies, or the code expires. Resolves
 * to the new user key (the refresh token, created for this device and named after it) and the
 * first session token (the access token).
 */
export async function loginWithBrowser(
  options: DeviceLoginOptions,
): Promise<{ userKey: string; token: MintedToken }> {
  const started = await postToService(options.url, "/oauth/device_authorization", {
    form: { client_id: CLIENT_ID, client_name: `agentpass on ${hostname()}`.slice(0, 100) },
  });
  if (!started) throw unreachable(options.url);
  const { device_code: deviceCode, user_code: userCode } = started.body;
  if (started.status === 429) {
    throw new CliError(
      EXIT.ERROR,
      `Too many logins started from this address; try again in ${retryWait(started)} seconds`,
    );
  }
  if (started.status !== 200 || typeof deviceCode !== "string" || typeof userCode !== "string") {
    throw new CliError(EXIT.ERROR, `AgentPass could not start a login (${reasonOf(started)})`);
  }
  // The server's link reaches the terminal and the browser only as a URL of the configured
  // service itself; any other is replaced by the service's own login page. No link carries the
  // code: the person types the code shown here, so no link can approve a login they did not
  // start.
  const page = serviceUrl(options.url, started.body.verification_uri) ?? `${options.url}/device`;
  options.tell(`To log in, open ${page} and enter the code ${printable(userCode, 20)}`);
  if (options.openBrowser) tryOpen(page);
  options.tell("Waiting for you to approve in the browser…");

  let interval = secondsOr(started.body.interval, 5) * 1000;
  const deadline = options.now() + secondsOr(started.body.expires_in, 600) * 1000;
  while (options.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, interval));
    const polled = await postToService(options.url, "/oauth/token", {
      form: { grant_type: DEVICE_CODE_GRANT, device_code: deviceCode, client_id: CLIENT_ID },
    });
    if (!polled) throw unreachable(options.url);
    const token = sessionTokenOf(polled, options.now);
    const userKey = polled.body.refresh_token;
    if (token && typeof userKey === "string") return { userKey, token };
    switch (polled.body.error) {
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
        throw new CliError(EXIT.ERROR, `AgentPass refused the login (${reasonOf(polled)})`);
    }
  }
  throw new CliError(EXIT.ERROR, "The code expired. Run: agentpass login");
}

/** A server's number of seconds, or `fallback` when it is not a usable one. */
function secondsOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : fallback;
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
