import { agentJwtFor } from "./agent-commands.ts";
import { loginWithBrowser } from "./device-login.ts";
import { createPrivateJwk, type DpopKey, dpopProof, importDpopKey } from "./dpop-key.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import {
  looksLikeUserKey,
  type MintedToken,
  mintAtSessionTokens,
  mintSessionToken,
  type TokenTarget,
} from "./mint.ts";
import type { Profiles } from "./profiles.ts";
import { promptHidden, readStdin } from "./read-secret.ts";
import { type RevokeResult, revokeUserKey } from "./revoke.ts";
import { printable } from "./terminal-text.ts";

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
 * Saves a user key for `url`, with a new DPoP key of its own. Without `--with-key` the key comes
 * from the browser (the OAuth device flow, whose first access token is cached); with it, from
 * stdin or a hidden prompt on a terminal, once its shape and a test mint say it works. A key it
 * replaces is revoked on the server once the new one is saved: a key this machine no longer
 * holds should not stay live. The logins stay unbound (no proof at login): `agentpass token`
 * mints bearer tokens with them as it always has.
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
    token = await mintSessionToken(ctx.url, key, null, null, ctx.now);
    if (key === previous) {
      ctx.profiles.cacheToken(ctx.url, null, token);
      await loginDpopKey(ctx);
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
  ctx.profiles.saveUserKey(ctx.url, key, createPrivateJwk());
  ctx.profiles.cacheToken(ctx.url, null, token);
  ctx.out(`Logged in to ${ctx.url} with key ${shown(key)}`);
  if (!previous) return;
  const revoked = await revokeUserKey(ctx.url, previous);
  if (revoked.ok) ctx.out(`Replaced key ${shown(previous)}, now revoked`);
  else ctx.tell(`Replaced key ${shown(previous)}, but ${stillLive(ctx, previous, revoked)}`);
}

/** Whose token to mint: the login's own, or one that names an agent saved under it. */
type Minter = { agent?: string | undefined };

/**
 * Prints a session token: a bearer one, or with `dpop` one bound to the login's DPoP key
 * (RFC 9449), to be sent as `Authorization: DPoP` with a proof per request (`headers`). With
 * `agent`, the token names that agent (its JWT proves it at the mint): partners see which agent.
 */
export async function token(
  ctx: CommandContext,
  options: { fresh: boolean; json: boolean; target: TokenTarget; dpop: boolean } & Minter,
): Promise<void> {
  const key = savedKey(ctx);
  const dpopKey = options.dpop ? await loginDpopKey(ctx) : null;
  const minted = await usableToken(ctx, key, options, dpopKey);
  if (!options.json) return ctx.out(minted.sessionToken);
  ctx.out(JSON.stringify(dpopKey ? { ...minted, tokenType: "DPoP" } : minted));
}

/**
 * Prints the two header lines of one request to `url` with a token bound to the login's key:
 * `Authorization: DPoP aps_…` and `DPoP: <proof>`, the proof made now for this method and URL
 * and this token (a proof is accepted once: one per request).
 */
export async function headers(
  ctx: CommandContext,
  options: { fresh: boolean; target: TokenTarget; method: string; url: string } & Minter,
): Promise<void> {
  const key = savedKey(ctx);
  const dpopKey = await loginDpopKey(ctx);
  const { sessionToken } = await usableToken(ctx, key, options, dpopKey);
  // Visible ASCII only: whatever the server answered stays one header line.
  if (!/^[\x21-\x7e]+$/.test(sessionToken)) {
    throw new CliError(EXIT.ERROR, "AgentPass answered a token that is not a header value");
  }
  const proof = dpopProof(dpopKey, { ...options, accessToken: sessionToken }, ctx.now);
  ctx.out(`Authorization: DPoP ${sessionToken}`);
  ctx.out(`DPoP: ${proof}`);
}

/**
 * A cached token (bearer, or bound to `dpopKey`; the login's or an agent's) with enough life
 * left, or a fresh one. An agent's token is minted at `/api/session-tokens` with its JWT.
 */
async function usableToken(
  ctx: CommandContext,
  key: string,
  options: { fresh: boolean; target: TokenTarget } & Minter,
  dpopKey: DpopKey | null,
): Promise<MintedToken> {
  const binding = dpopKey && { jkt: dpopKey.jkt };
  const { target, agent } = options;
  if (agent && target && "resource" in target) {
    throw new CliError(
      EXIT.USAGE,
      "--agent mints for any partner or one --audience, not --resource",
    );
  }
  const saved = agent ? ctx.profiles.agents(ctx.url)[agent] : undefined;
  if (agent && !saved) {
    throw new CliError(
      EXIT.USAGE,
      `No agent named ${printable(agent, 100)} is saved for ${ctx.url}. Run: agentpass agents list`,
    );
  }
  const cached = options.fresh
    ? undefined
    : ctx.profiles.cachedToken(ctx.url, target, binding, saved?.id);
  if (cached && Date.parse(cached.expiresAt) - ctx.now() > ctx.minTtlSeconds * 1000) {
    return cached;
  }
  const minted =
    agent && saved
      ? await mintAtSessionTokens(
          ctx.url,
          key,
          {
            agent: await agentJwtFor(ctx, saved),
            ...(target && "audience" in target && { audience: target.audience }),
          },
          dpopKey,
          ctx.now,
        )
      : await mintSessionToken(ctx.url, key, target, dpopKey, ctx.now);
  ctx.profiles.cacheToken(ctx.url, target, minted, binding, saved?.id);
  return minted;
}

/**
 * The DPoP key of the saved login, made now for a login saved before logins had one. A command
 * mints and proves with the one key it returns; bound tokens are cached under their key's
 * thumbprint, so should two commands each add a key at once, neither reuses a token of the
 * other's key.
 */
async function loginDpopKey(ctx: CommandContext): Promise<DpopKey> {
  if (!ctx.profiles.dpopKey(ctx.url)) ctx.profiles.addDpopKey(ctx.url, createPrivateJwk());
  const key = importDpopKey(ctx.profiles.dpopKey(ctx.url));
  if (!key) {
    throw new CliError(
      EXIT.ERROR,
      `The DPoP key saved for ${ctx.url} is not a P-256 private key. Log in again with: agentpass login`,
    );
  }
  return key;
}

/** Who am I: the server, the saved key's prefix, and whether it works right now. */
export async function status(ctx: CommandContext): Promise<void> {
  const key = savedKey(ctx);
  ctx.out(`Server: ${ctx.url}`);
  ctx.out(`Key:    ${shown(key)}`);
  const minted = await mintSessionToken(ctx.url, key, null, null, ctx.now);
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
