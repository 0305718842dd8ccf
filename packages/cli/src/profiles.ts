import type { JsonWebKey } from "node:crypto";
import { join } from "node:path";
import { configDir, readJsonFile, writePrivateJsonFile } from "./files.ts";
import type { TokenTarget } from "./mint.ts";

interface Profile {
  key: string;
  savedAt: string;
  /** The login's DPoP key (RFC 9449), a private JWK: as secret as the user key beside it. */
  dpopKey?: JsonWebKey;
  /** The login's host key (Agent Auth Protocol), a private Ed25519 JWK: made for its first agent. */
  hostKey?: JsonWebKey;
  /** The agents registered under that host, by name: each its id and private Ed25519 JWK. */
  agents?: Record<string, SavedAgent>;
}

export interface SavedAgent {
  id: string;
  key: JsonWebKey;
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
  // a bound token's key has "dpop <jkt> " after the URL, an agent's "agent <id> ".
  const tokenKey = (url: string, target: TokenTarget, binding: TokenBinding, agent?: string) =>
    `${url} ${agent ? `agent ${agent} ` : ""}${binding ? `dpop ${binding.jkt} ` : ""}${target === null ? "" : "audience" in target ? target.audience : `resource ${target.resource}`}`;

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
    /** The login's host key, made and saved now when it has none yet. */
    hostKey(url: string, make: () => JsonWebKey): JsonWebKey | undefined {
      const all = profiles();
      const profile = all[url];
      if (!profile) return undefined;
      if (profile.hostKey) return profile.hostKey;
      const hostKey = make();
      writePrivateJsonFile(dir, CREDENTIALS, { ...all, [url]: { ...profile, hostKey } });
      return hostKey;
    },
    agents(url: string): Record<string, SavedAgent> {
      return profiles()[url]?.agents ?? {};
    },
    /** Saves (or, with `null`, forgets) an agent of the login by name. */
    saveAgent(url: string, name: string, agent: SavedAgent | null): void {
      const all = profiles();
      const profile = all[url];
      if (!profile) return;
      const agents = { ...profile.agents };
      if (agent) agents[name] = agent;
      else delete agents[name];
      writePrivateJsonFile(dir, CREDENTIALS, { ...all, [url]: { ...profile, agents } });
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
      agent?: string,
    ): CachedToken | undefined {
      return tokens()[tokenKey(url, target, binding, agent)];
    },
    cacheToken(
      url: string,
      target: TokenTarget,
      token: CachedToken,
      binding: TokenBinding = null,
      agent?: string,
    ): void {
      const key = tokenKey(url, target, binding, agent);
      writePrivateJsonFile(dir, TOKENS, { ...tokens(), [key]: token });
    },
  };
}

export type Profiles = ReturnType<typeof openProfiles>;

function withoutUrl(tokens: Record<string, CachedToken>, url: string) {
  return Object.fromEntries(Object.entries(tokens).filter(([key]) => !key.startsWith(`${url} `)));
}
