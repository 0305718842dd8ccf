import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * Where the CLI keeps the user key and cached tokens: `$XDG_CONFIG_HOME/agentpass`
 * (default `~/.config/agentpass`), or `%APPDATA%\agentpass` on Windows. The folder is 0700 and
 * every file 0600: only the user can read their key.
 */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (process.platform === "win32" && env.APPDATA) return join(env.APPDATA, "agentpass");
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config"), "agentpass");
}

export function readJsonFile<T>(path: string, fallback: T): T {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return fallback;
  }
}

/** Writes `value` as JSON, readable by the owner only, replacing the old file atomically. */
export function writePrivateJsonFile(dir: string, name: string, value: unknown): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, name);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}
