import { execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The repository's root: where the services' bins run from. */
export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
export const IDENTITY = "apps/identity/src/bin.ts";
export const NOTES = "apps/notes/src/bin.ts";

/** Runs a bin to completion; its stdout is the answer, its stderr goes to `logs`. */
export function runBin(bin: string, args: string[], env: Record<string, string>, logs: string[]) {
  return new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: ROOT, env: { PATH: "", ...env } },
      (error, stdout, stderr) => {
        logs.push(stderr);
        if (error) reject(new Error(`${bin} ${args.join(" ")}: ${stderr}`));
        else resolve(stdout.trim());
      },
    );
  });
}

/**
 * A bin's `serve` on a free loopback port (`LOG_LEVEL` info unless `env` says), every byte it
 * writes kept in `logs`: its URL once it listens, and its stop (SIGTERM, then its exit).
 */
export function serveBin(bin: string, env: Record<string, string>, logs: string[]) {
  const child = spawn(process.execPath, [bin, "serve"], {
    cwd: ROOT,
    env: { PATH: "", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output += chunk;
    logs.push(chunk.toString());
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", () => {
      const found = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
      if (found) resolve(found);
    });
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const stop = () => {
    child.kill("SIGTERM");
    return exited;
  };
  return { url, stop };
}
