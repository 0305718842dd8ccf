import { join } from "node:path";
import { configDir, readJsonFile, writePrivateJsonFile } from "./files.ts";
import type { TokenTarget } from "./mint.ts";

interface Profile {
  key: string;
  savedAt: string;
}

interface CachedToken {
  sessionToken: string;
  expiresAt: string;
}

const CREDENTIALS = "credentials.json";
const TOKENS = "tokens.json";

/** The saved user keys (one per server URL) and cached session tokens of this user. */
export function openProfiles(env: NodeJS.ProcessEnv = process.env) {
  const dir = configDir(env);
  const profiles = () => readJsonFile<Record<string, Profile>>(join(dir, CREDENTIALS), {});
  const tokens = () => readJsonFile<Record<string, CachedToken>>(join(dir, TOKENS), {});
  // "<url> " for any partner, "<url> <partner id>" for an audience, "<url> resource <url>".
  const tokenKey = (url: string, target: TokenTarget) =>
    `${url} ${target === null ? "" : "audience" in target ? target.audience : `resource ${target.resource}`}`;

  return {
    dir,
    /** The servers a user key is saved for. */
    savedUrls(): string[] {
      return Object.keys(profiles());
    },
    userKey(url: string): string | undefined {
      return profiles()[url]?.key;
    },
    saveUserKey(url: string, key: string): void {
      writePrivateJsonFile(dir, CREDENTIALS, {
        ...profiles(),
        [url]: { key, savedAt: new Date().toISOString() },
      });
      // A new key invalidates the tokens of the old one.
      writePrivateJsonFile(dir, TOKENS, withoutUrl(tokens(), url));
    },
    forget(url: string): boolean {
      const all = profiles();
      const known = url in all;
      delete all[url];
      writePrivateJsonFile(dir, CREDENTIALS, all);
      writePrivateJsonFile(dir, TOKENS, withoutUrl(tokens(), url));
      return known;
    },
    cachedToken(url: string, target: TokenTarget): CachedToken | undefined {
      return tokens()[tokenKey(url, target)];
    },
    cacheToken(url: string, target: TokenTarget, token: CachedToken): void {
      writePrivateJsonFile(dir, TOKENS, { ...tokens(), [tokenKey(url, target)]: token });
    },
  };
}

export type Profiles = ReturnType<typeof openProfiles>;

function withoutUrl(tokens: Record<string, CachedToken>, url: string) {
  return Object.fromEntries(Object.entries(tokens).filter(([key]) => !key.startsWith(`${url} `)));
}
