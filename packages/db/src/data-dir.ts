import { accessSync, constants, mkdirSync, type Stats, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { getSystemErrorMessage } from "node:util";

/**
 * `data/` at the repository's root, where `npm start` keeps both services' SQLite files: the
 * admin command lines find the same database from any working folder, never a new empty one
 * in the folder they were started from. A DATA_DIR that is set is taken as given.
 */
export const DEFAULT_DATA_DIR = fileURLToPath(new URL("../../../data", import.meta.url));

/**
 * Makes DATA_DIR if it is missing and checks that it is a directory this process can write, or
 * says why not as `DATA_DIR <path>: <reason>`.
 *
 * The missing folders are made one by one from the nearest one that exists, never with
 * `mkdirSync(path, { recursive: true })`: Node's recursive mkdir steps back to the parent on
 * ENOENT and forward again once the parent is a directory, so where mkdir answers ENOENT in a
 * directory that exists (`/proc/nope`, a stale mount) it loops forever at 100 % of a core.
 */
export function ensureDataDir(path: string): { ok: true } | { ok: false; error: string } {
  const refuse = (reason: string) => ({ ok: false as const, error: `DATA_DIR ${path}: ${reason}` });
  const missing: string[] = [];
  let at = resolve(path);
  try {
    let found = statOf(at);
    while (!found && dirname(at) !== at) {
      missing.unshift(at);
      at = dirname(at);
      found = statOf(at);
    }
    if (found && !found.isDirectory()) {
      return refuse(at === resolve(path) ? "not a directory" : `${at} is not a directory`);
    }
    for (const folder of missing) {
      try {
        mkdirSync(folder, { mode: 0o700 });
      } catch (error) {
        // Made by a process starting beside this one: fine, if it is a directory.
        if (!statOf(folder)?.isDirectory()) {
          return refuse(`cannot create ${folder}: ${reasonOf(error)}`);
        }
      }
    }
    accessSync(path, constants.W_OK | constants.X_OK);
  } catch (error) {
    return refuse(`not usable: ${reasonOf(error)}`);
  }
  return { ok: true };
}

function statOf(path: string): Stats | undefined {
  return statSync(path, { throwIfNoEntry: false });
}

/** "permission denied (EACCES)": the system's words, without the path Node's message repeats. */
function reasonOf(error: unknown): string {
  const { errno, code } = error as NodeJS.ErrnoException;
  if (typeof errno !== "number" || !code) return String(error);
  return `${getSystemErrorMessage(errno)} (${code})`;
}
