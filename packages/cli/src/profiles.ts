import { join } from "node:path";
import { configDir, readJsonFile, writePrivateJsonFile } from "./files.ts";

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
  const tokenKey = (url: string, audience: string | undefined) => `${url} ${audience ?? ""}`;

  return {
    dir,
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
    cachedToken(url: string, audience: string | undefined): CachedToken | undefined {
      return tokens()[tokenKey(url, audience)];
    },
    cacheToken(url: string, audience: string | undefined, token: CachedToken): void {
      writePrivateJsonFile(dir, TOKENS, { ...tokens(), [tokenKey(url, audience)]: token });
    },
  };
}

export type Profiles = ReturnType<typeof openProfiles>;

function withoutUrl(tokens: Record<string, CachedToken>, url: string) {
  return Object.fromEntries(Object.entries(tokens).filter(([key]) => !key.startsWith(`${url} `)));
}
