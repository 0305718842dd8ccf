import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

export { NODE_FLAGS } from "../scripts/node-flags.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

/**
 * Where Node keeps the code it has stripped of TypeScript types, as the README recommends for
 * production (`NODE_COMPILE_CACHE`): a process whose modules are all in it never loads the type
 * stripper, a WebAssembly module that stays resident for the life of the process.
 */
process.env.NODE_COMPILE_CACHE ??= `${ROOT}node_modules/.cache/node-compile-cache`;

/**
 * Fills the compile cache with both services' code by running their admin CLIs, as a deploy's
 * `migrate` step does before the servers start: a first run of the bench on a fresh clone then
 * measures the servers as every later start runs.
 */
export async function warmCompileCache(): Promise<void> {
  await runCommand(["apps/identity/src/bin.ts", "--help"], {});
  await runCommand(["apps/notes/src/bin.ts", "--help"], {});
}

export interface Server {
  name: string;
  url: string;
  pid: number;
  /** The JSON line the server printed when it was ready. */
  ready: Record<string, unknown>;
  stop(): Promise<void>;
}

/**
 * Starts `script` in its own Node process and waits for its first JSON line on stdout that has
 * a `url` (the bench's own servers print one; the services log one at start-up).
 */
export function startServer(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<Server> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let errors = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    errors = (errors + chunk.toString()).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    let buffered = "";
    const timer = setTimeout(
      () => fail(new Error(`${name} did not start in 30 s:\n${errors}`)),
      30_000,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(error);
    };
    child.once("exit", (code) =>
      fail(new Error(`${name} exited (${code}) before it listened:\n${errors}`)),
    );
    child.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (const line of buffered.split("\n").slice(0, -1)) {
        const ready = parseJson(line);
        if (typeof ready?.url !== "string") continue;
        clearTimeout(timer);
        child.removeAllListeners("exit");
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        resolve({
          name,
          url: ready.url,
          pid: child.pid as number,
          ready,
          stop: () => stopChild(child),
        });
        return;
      }
      buffered = buffered.slice(buffered.lastIndexOf("\n") + 1);
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 5000).unref();
  });
}

function parseJson(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Runs a repository command (an admin CLI) to completion and returns its stdout. */
export function runCommand(
  args: string[],
  env: Record<string, string>,
  input?: string,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      args,
      { cwd: ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${args.join(" ")}: ${stderr}`)) : resolve(stdout.trim()),
    );
    child.stdin?.end(input ?? "");
  });
}

/** Resident set size of a process in MB, from /proc (0 where /proc is missing). */
export function rssMegabytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * The identity service's environment in a bench: loopback, its data under `work`, and budgets a
 * partner's bench key never reaches (the limits still count every attempt, they just never refuse).
 * The sign-in budgets keep their defaults.
 */
export function benchIdentityEnv(work: string, databaseUrl: string | undefined) {
  return {
    DATA_DIR: join(work, "identity"),
    DATABASE_URL: databaseUrl ?? "",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    MINTS_PER_MINUTE: "1000000000",
    FAILED_VERIFIES_PER_MINUTE: "1000000000",
    BAD_KEYS_PER_MINUTE: "1000000000",
  };
}

/** On PostgreSQL: one fresh database per service, dropped at the end. */
export async function createBenchDatabases(adminUrl: string | undefined) {
  if (!adminUrl) return { identity: undefined, notes: undefined, drop: async () => {} };
  const suffix = randomBytes(4).toString("hex");
  const names = {
    identity: `agentpass_bench_identity_${suffix}`,
    notes: `agentpass_bench_notes_${suffix}`,
  };
  const admin = async (statement: (name: string) => string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      for (const name of Object.values(names)) await client.query(statement(name));
    } finally {
      await client.end();
    }
  };
  await admin((name) => `CREATE DATABASE ${name}`);
  const url = (name: string) => {
    const parsed = new URL(adminUrl);
    parsed.pathname = `/${name}`;
    return parsed.toString();
  };
  return {
    identity: url(names.identity),
    notes: url(names.notes),
    drop: () => admin((name) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
