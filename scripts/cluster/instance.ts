import { type ChildProcess, spawn } from "node:child_process";
import { NODE_FLAGS } from "../node-flags.ts";

/** How long an instance may take to answer /readyz 200 after it was started. */
const READY_TIMEOUT_MS = 60_000;
/** How much of an instance's output is kept for the report: its last lines. */
const KEPT_OUTPUT_CHARS = 256 * 1024;

/** One service process (`bin.ts serve`) on a fixed loopback port. */
export interface ServiceInstance {
  readonly name: string;
  /** Its own address, not through haproxy. */
  readonly url: string;
  readonly port: number;
  /** The last 256 KiB of what it wrote to stdout and stderr, over all its lives. */
  output(): string;
  /** SIGKILL, as a crash or the OOM killer: resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same environment; resolves once it is ready. */
  restart(): Promise<void>;
  /** SIGTERM (a graceful shutdown), SIGKILL past 10 s; resolves once the process is gone. */
  stop(): Promise<void>;
}

/**
 * Starts `node <bin> serve`, with the flags of its `service` (`NODE_FLAGS`), on `port` of
 * 127.0.0.1 with `env` as its whole environment (and PATH), and resolves once its `/readyz`
 * answers 200, which says its database answers too.
 */
export async function startInstance(options: {
  name: string;
  service: keyof typeof NODE_FLAGS;
  bin: string;
  port: number;
  env: Record<string, string>;
}): Promise<ServiceInstance> {
  const url = `http://127.0.0.1:${options.port}`;
  let output = "";
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function launch() {
    const started = spawn(
      process.execPath,
      [...NODE_FLAGS[options.service], options.bin, "serve"],
      {
        env: {
          PATH: process.env.PATH ?? "",
          ...options.env,
          PORT: String(options.port),
          HOST: "127.0.0.1",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child = started;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-KEPT_OUTPUT_CHARS);
    };
    started.stdout?.on("data", keep);
    started.stderr?.on("data", keep);
    exited = new Promise((resolve) => started.once("exit", () => resolve()));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (started.exitCode !== null || started.signalCode !== null) break;
      const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) }).then(
        (answer) => answer.status === 200,
        () => false,
      );
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    started.kill("SIGKILL");
    throw new Error(`${options.name} did not get ready:\n${output.slice(-4000)}`);
  }

  async function end(signal: NodeJS.Signals) {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    running.kill(signal);
    const forced = setTimeout(() => running.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(forced);
  }

  await launch();
  return {
    name: options.name,
    url,
    port: options.port,
    output: () => output,
    kill: () => end("SIGKILL"),
    restart: launch,
    stop: () => end("SIGTERM"),
  };
}
