import type { JsonWebKey } from "node:crypto";
import { join } from "node:path";
import { configDir, readJsonFile, writePrivateJsonFile } from "./files.ts";
import type { TokenTarget } from "./mint.ts";

interface Profile {
  key: string;
  savedAt: string;
  /** The login's DPoP key (RFC 9449), a private JWK: as secret as the user key beside it. */
  dpopKey?: JsonWebKey;
}

interface CachedToken {
  sessionToken: string;
  expiresAt: string;
}

const CREDENTIALS = "credentials.json";
const TOKENS = "tokens.json";

/**
 * Whose token a cached one is: bearer, or bound to the DPoP key of this thumbprint. A bound
 * token is looked up by its key's thumbprint, so it is never taken for another key's.
 */
export type TokenBinding = null | { jkt: string };

/** The saved user keys (one per server URL) and cached session tokens of this user. */
export function openProfiles(env: NodeJS.ProcessEnv = process.env) {
  const dir = configDir(env);
  const profiles = () => readJsonFile<Record<string, Profile>>(join(dir, CREDENTIALS), {});
  const tokens = () => readJsonFile<Record<string, CachedToken>>(join(dir, TOKENS), {});
  // "<url> " for any partner, "<url> <partner id>" for an audience, "<url> resource <url>";
  // a bound token's key has "dpop <jkt> " after the URL.
  const tokenKey = (url: string, target: TokenTarget, binding: TokenBinding) =>
    `${url} ${binding ? `dpop ${binding.jkt} ` : ""}${target === null ? "" : "audience" in target ? target.audience : `resource ${target.resource}`}`;

  return {
    dir,
    /** The servers a user key is saved for. */
    savedUrls(): string[] {
      return Object.keys(profiles());
    },
    userKey(url: string): string | undefined {
      return profiles()[url]?.key;
    },
    /** Saves a login: its user key and its own new DPoP key, replacing the old login's. */
    saveUserKey(url: string, key: string, dpopKey: JsonWebKey): void {
      writePrivateJsonFile(dir, CREDENTIALS, {
        ...profiles(),
        [url]: { key, savedAt: new Date().toISOString(), dpopKey },
      });
      // A new key invalidates the tokens of the old one.
      writePrivateJsonFile(dir, TOKENS, withoutUrl(tokens(), url));
    },
    dpopKey(url: string): JsonWebKey | undefined {
      return profiles()[url]?.dpopKey;
    },
    /** Gives a login saved before DPoP keys its key; one saved already is kept. */
    addDpopKey(url: string, dpopKey: JsonWebKey): void {
      const all = profiles();
      const profile = all[url];
      if (!profile || profile.dpopKey) return;
      writePrivateJsonFile(dir, CREDENTIALS, { ...all, [url]: { ...profile, dpopKey } });
    },
    forget(url: string): boolean {
      const all = profiles();
      const known = url in all;
      delete all[url];
      writePrivateJsonFile(dir, CREDENTIALS, all);
      writePrivateJsonFile(dir, TOKENS, withoutUrl(tokens(), url));
      return known;
    },
    cachedToken(
      url: string,
      target: TokenTarget,
      binding: TokenBinding = null,
    ): CachedToken | undefined {
      return tokens()[tokenKey(url, target, binding)];
    },
    cacheToken(
      url: string,
      target: TokenTarget,
      token: CachedToken,
      binding: TokenBinding = null,
    ): void {
      const key = tokenKey(url, target, binding);
      writePrivateJsonFile(dir, TOKENS, { ...tokens(), [key]: token });
    },
  };
}

export type Profiles = ReturnType<typeof openProfiles>;

function withoutUrl(tokens: Record<string, CachedToken>, url: string) {
  return Object.fromEntries(Object.entries(tokens).filter(([key]) => !key.startsWith(`${url} `)));
}
