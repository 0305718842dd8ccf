import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../../src/bin.ts", import.meta.url));

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real CLI as a child process, with the home folder and `AGENTPASS_URL` of the moment
 * (both change from test to test), and fails the test when its output holds any of `secrets`.
 * An `env` value of undefined leaves that variable unset.
 */
export function cliRunner(setting: { home: () => string; url: () => string; secrets: string[] }) {
  return (
    args: string[],
    stdin?: string,
    env: Record<string, string | undefined> = {},
  ): Promise<Run> =>
    new Promise((resolve) => {
      const all: Record<string, string | undefined> = {
        PATH: process.env.PATH,
        HOME: setting.home(),
        XDG_CONFIG_HOME: join(setting.home(), ".config"),
        AGENTPASS_URL: setting.url(),
        ...env,
      };
      const child = execFile(
        process.execPath,
        [BIN, ...args],
        {
          env: Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined)),
        },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
          for (const secret of setting.secrets) {
            assert.ok(!stdout.includes(secret) && !stderr.includes(secret), "a secret was printed");
          }
          resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.end(stdin ?? "");
    });
}
