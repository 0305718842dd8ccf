import { loginWithBrowser } from "./device-login.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import { looksLikeUserKey, mintSessionToken } from "./mint.ts";
import type { Profiles } from "./profiles.ts";
import { promptHidden, readStdin } from "./read-secret.ts";

export interface CommandContext {
  url: string;
  profiles: Profiles;
  out: (line: string) => void;
  /** Messages for the person at the terminal (stderr), never parsed by scripts. */
  tell: (line: string) => void;
  /** Seconds a cached token must still have to be reused. */
  minTtlSeconds: number;
  now: () => number;
}

/**
 * Saves a user key for `url`, once its shape and a test mint say it works. Without
 * `--with-key` the key comes from the browser (device login); with it, from stdin, or from a
 * hidden prompt on a terminal.
 */
export async function login(
  ctx: CommandContext,
  options: { withKey: boolean; openBrowser: boolean },
): Promise<void> {
  let key: string;
  if (!options.withKey) {
    key = await loginWithBrowser({
      url: ctx.url,
      tell: ctx.tell,
      openBrowser: options.openBrowser,
    });
  } else if (process.stdin.isTTY) {
    key = await promptHidden("Paste your AgentPass user key (apu_…): ");
  } else {
    key = await readStdin();
  }
  if (!key) throw new CliError(EXIT.USAGE, "No key given");
  if (!looksLikeUserKey(key)) {
    throw new CliError(
      EXIT.KEY_REJECTED,
      "That is not an AgentPass user key (they start with apu_)",
    );
  }
  const token = await mintSessionToken(ctx.url, key, undefined);
  ctx.profiles.saveUserKey(ctx.url, key);
  ctx.profiles.cacheToken(ctx.url, undefined, token);
  ctx.out(`Logged in to ${ctx.url} with key ${displayPrefix(key)}…`);
}

/** Prints a session token: a cached one with enough life left, or a fresh one. */
export async function token(
  ctx: CommandContext,
  options: { fresh: boolean; json: boolean; audience: string | undefined },
): Promise<void> {
  const key = savedKey(ctx);
  const cached = options.fresh ? undefined : ctx.profiles.cachedToken(ctx.url, options.audience);
  const minted =
    cached && Date.parse(cached.expiresAt) - ctx.now() > ctx.minTtlSeconds * 1000
      ? cached
      : await mintSessionToken(ctx.url, key, options.audience);
  if (minted !== cached) ctx.profiles.cacheToken(ctx.url, options.audience, minted);
  ctx.out(options.json ? JSON.stringify(minted) : minted.sessionToken);
}

/** Who am I: the server, the saved key's prefix, and whether it works right now. */
export async function status(ctx: CommandContext): Promise<void> {
  const key = savedKey(ctx);
  ctx.out(`Server: ${ctx.url}`);
  ctx.out(`Key:    ${displayPrefix(key)}…`);
  const minted = await mintSessionToken(ctx.url, key, undefined);
  ctx.profiles.cacheToken(ctx.url, undefined, minted);
  ctx.out("Status: working (a session token was minted)");
}

/** Forgets the saved key and cached tokens of `url`. */
export function logout(ctx: CommandContext): void {
  const known = ctx.profiles.forget(ctx.url);
  ctx.out(known ? `Logged out of ${ctx.url}` : `Was not logged in to ${ctx.url}`);
}

function savedKey(ctx: CommandContext): string {
  const key = ctx.profiles.userKey(ctx.url);
  if (!key) {
    throw new CliError(EXIT.NOT_LOGGED_IN, `Not logged in to ${ctx.url}. Run: agentpass login`);
  }
  return key;
}

function displayPrefix(key: string): string {
  return key.slice(0, 12);
}
