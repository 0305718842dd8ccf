import { loginWithBrowser } from "./device-login.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import { looksLikeUserKey, type MintedToken, mintSessionToken, type TokenTarget } from "./mint.ts";
import type { Profiles } from "./profiles.ts";
import { promptHidden, readStdin } from "./read-secret.ts";
import { type RevokeResult, revokeUserKey } from "./revoke.ts";

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
 * Saves a user key for `url`. Without `--with-key` the key comes from the browser (the OAuth
 * device flow, whose first access token is cached); with it, from stdin or a hidden prompt on a
 * terminal, once its shape and a test mint say it works. A key it replaces is revoked on the
 * server once the new one is saved: a key this machine no longer holds should not stay live.
 */
export async function login(
  ctx: CommandContext,
  options: { withKey: boolean; openBrowser: boolean },
): Promise<void> {
  const previous = ctx.profiles.userKey(ctx.url);
  let key: string;
  let token: MintedToken;
  if (options.withKey) {
    key = process.stdin.isTTY
      ? await promptHidden("Paste your AgentPass user key (apu_…): ")
      : await readStdin();
    checkShape(key);
    if (previous && previous !== key) announceReplacement(ctx, previous);
    token = await mintSessionToken(ctx.url, key, null, ctx.now);
    if (key === previous) {
      ctx.profiles.cacheToken(ctx.url, null, token);
      ctx.out(`Key ${shown(key)} is already saved for ${ctx.url}: nothing changed`);
      return;
    }
  } else {
    if (previous) announceReplacement(ctx, previous);
    ({ userKey: key, token } = await loginWithBrowser({
      url: ctx.url,
      tell: ctx.tell,
      openBrowser: options.openBrowser,
      now: ctx.now,
    }));
    checkShape(key);
  }
  ctx.profiles.saveUserKey(ctx.url, key);
  ctx.profiles.cacheToken(ctx.url, null, token);
  ctx.out(`Logged in to ${ctx.url} with key ${shown(key)}`);
  if (!previous) return;
  const revoked = await revokeUserKey(ctx.url, previous);
  if (revoked.ok) ctx.out(`Replaced key ${shown(previous)}, now revoked`);
  else ctx.tell(`Replaced key ${shown(previous)}, but ${stillLive(ctx, previous, revoked)}`);
}

/** Prints a session token: a cached one with enough life left, or a fresh one. */
export async function token(
  ctx: CommandContext,
  options: { fresh: boolean; json: boolean; target: TokenTarget },
): Promise<void> {
  const key = savedKey(ctx);
  const cached = options.fresh ? undefined : ctx.profiles.cachedToken(ctx.url, options.target);
  const minted =
    cached && Date.parse(cached.expiresAt) - ctx.now() > ctx.minTtlSeconds * 1000
      ? cached
      : await mintSessionToken(ctx.url, key, options.target, ctx.now);
  if (minted !== cached) ctx.profiles.cacheToken(ctx.url, options.target, minted);
  ctx.out(options.json ? JSON.stringify(minted) : minted.sessionToken);
}

/** Who am I: the server, the saved key's prefix, and whether it works right now. */
export async function status(ctx: CommandContext): Promise<void> {
  const key = savedKey(ctx);
  ctx.out(`Server: ${ctx.url}`);
  ctx.out(`Key:    ${shown(key)}`);
  const minted = await mintSessionToken(ctx.url, key, null, ctx.now);
  ctx.profiles.cacheToken(ctx.url, null, minted);
  ctx.out("Status: working (a session token was minted)");
}

/**
 * Revokes the saved key on the server (RFC 7009), then forgets it and the cached tokens of
 * `url`. The files go even when the server says no or cannot be reached, and the person is told
 * the key is still live; `--local` only forgets, on purpose.
 */
export async function logout(ctx: CommandContext, options: { local: boolean }): Promise<void> {
  const key = ctx.profiles.userKey(ctx.url);
  const revoked = key && !options.local ? await revokeUserKey(ctx.url, key) : undefined;
  ctx.profiles.forget(ctx.url);
  if (!key) return ctx.out(`Was not logged in to ${ctx.url}`);
  if (!revoked) {
    return ctx.out(
      `Logged out of ${ctx.url} on this machine only: key ${shown(key)} still works until you revoke it at ${ctx.url}/keys`,
    );
  }
  if (revoked.ok) return ctx.out(`Logged out of ${ctx.url}: key ${shown(key)} is revoked`);
  throw new CliError(
    revoked.reason === "unreachable" ? EXIT.UNREACHABLE : EXIT.ERROR,
    `Forgot the key on this machine, but ${stillLive(ctx, key, revoked)}`,
  );
}

function checkShape(key: string): void {
  if (!key) throw new CliError(EXIT.USAGE, "No key given");
  if (!looksLikeUserKey(key)) {
    throw new CliError(
      EXIT.KEY_REJECTED,
      "That is not an AgentPass user key (they start with apu_)",
    );
  }
}

function announceReplacement(ctx: CommandContext, previous: string): void {
  ctx.tell(
    `Key ${shown(previous)} is saved for ${ctx.url}: the new key replaces it, and it is revoked once the new one is saved (to keep it working, run agentpass logout --local first)`,
  );
}

/** Why a key this machine gave up is still live, and where the person can revoke it. */
function stillLive(ctx: CommandContext, key: string, failed: RevokeResult & { ok: false }): string {
  const why =
    failed.reason === "unreachable"
      ? `AgentPass at ${ctx.url} cannot be reached`
      : `AgentPass did not revoke it (${failed.reason})`;
  return `${why}: key ${shown(key)} is still live. Revoke it at ${ctx.url}/keys`;
}

function savedKey(ctx: CommandContext): string {
  const key = ctx.profiles.userKey(ctx.url);
  if (!key) {
    throw new CliError(EXIT.NOT_LOGGED_IN, `Not logged in to ${ctx.url}. Run: agentpass login`);
  }
  return key;
}

/** A key as it may be shown: its first 12 characters (`apu_` and 8 more), never the secret. */
function shown(key: string): string {
  return `${key.slice(0, 12)}…`;
}
