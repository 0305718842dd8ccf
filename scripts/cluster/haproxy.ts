import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const HAPROXY = process.env.HAPROXY_PATH ?? "/usr/sbin/haproxy";

/** A frontend on `port` balancing round-robin over `servers` (loopback ports). */
interface BalancedService {
  name: string;
  port: number;
  servers: { name: string; port: number }[];
}

/**
 * The configuration of one haproxy in front of `services`, as a production one would be:
 * round-robin, a health check on `/readyz` (the database answers too) every 500 ms, a server
 * out after 2 failed checks and back after 2 good ones, X-Forwarded-For for the services'
 * TRUST_PROXY. A request whose connection to a server fails (a killed instance its checks have
 * not caught yet) is sent to another server; a request already sent is never resent. Each answer
 * names the server that gave it in `X-Served-By`, so a test knows which instance answered.
 */
function haproxyConfig(services: BalancedService[], statsSocket: string): string {
  const sections = services.map(
    (service) => `frontend ${service.name}
  bind 127.0.0.1:${service.port}
  default_backend ${service.name}
backend ${service.name}
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server check inter 500ms fall 2 rise 2
  http-response set-header X-Served-By %[srv_name]
${service.servers.map((server) => `  server ${server.name} 127.0.0.1:${server.port}`).join("\n")}
`,
  );
  return `global
  stats socket ${statsSocket} mode 600 level admin
  maxconn 2000
defaults
  mode http
  option forwardfor
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  timeout check 1s
  retries 3
  option redispatch 1
${sections.join("")}`;
}

export interface Haproxy {
  url(service: string): string;
  /** Each server's state as haproxy's checks see it, by server name: "UP", "DOWN", … */
  states(): Promise<Record<string, string>>;
  /**
   * Resolves once haproxy says `server` is `state`, with the moment it said so
   * (`performance.now()`): every request sent after it saw that state. Throws past `timeoutMs`.
   */
  waitFor(server: string, state: "UP" | "DOWN", timeoutMs?: number): Promise<number>;
  /** What haproxy wrote (its warnings, e.g. a server going down). */
  log(): string;
  close(): Promise<void>;
}

/** Debian's haproxy (`HAPROXY_PATH`) in front of `services`, its configuration in a temp dir. */
export async function startHaproxy(services: BalancedService[]): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), "agentpass-cluster-haproxy-"));
  const statsSocket = join(dir, "stats.sock");
  const configFile = join(dir, "haproxy.cfg");
  writeFileSync(configFile, haproxyConfig(services, statsSocket));
  const child: ChildProcess = spawn(HAPROXY, ["-f", configFile, "-db"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-64 * 1024);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let running = true;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", () => {
      running = false;
      resolve();
    }),
  );

  async function states(): Promise<Record<string, string>> {
    const csv = await askStatsSocket(statsSocket, "show stat");
    const [header = "", ...rows] = csv.trim().split("\n");
    const columns = header.replace(/^# /, "").split(",");
    const name = columns.indexOf("svname");
    const status = columns.indexOf("status");
    const found: Record<string, string> = {};
    for (const row of rows) {
      const fields = row.split(",");
      const server = fields[name] ?? "";
      if (server !== "FRONTEND" && server !== "BACKEND") {
        // "UP 1/2" is up with one failed check, "DOWN 1/2" down with one good one.
        found[server] = (fields[status] ?? "").split(" ")[0] ?? "";
      }
    }
    return found;
  }

  async function waitFor(server: string, state: "UP" | "DOWN", timeoutMs = 15_000) {
    const started = performance.now();
    while (performance.now() - started < timeoutMs) {
      // A haproxy that could not start (a port taken) says why in its log: no use waiting.
      if (!running) throw new Error(`haproxy exited before ${server} was ${state}`);
      const now = await states().catch(() => ({}) as Record<string, string>);
      if (now[server] === state) return performance.now();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`haproxy did not see ${server} ${state} within ${timeoutMs} ms`);
  }

  const close = async () => {
    child.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const service of services) {
      for (const server of service.servers) await waitFor(server.name, "UP");
    }
  } catch (error) {
    await close();
    throw new Error(`${(error as Error).message}\nhaproxy: ${log}`);
  }
  return {
    url: (service) => {
      const found = services.find((candidate) => candidate.name === service);
      if (!found) throw new Error(`no haproxy frontend ${service}`);
      return `http://127.0.0.1:${found.port}`;
    },
    states,
    waitFor,
    log: () => log,
    close,
  };
}

/** One command on haproxy's stats socket; its whole answer. */
function askStatsSocket(path: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString();
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
    socket.setTimeout(2000, () => socket.destroy(new Error("stats socket timed out")));
    socket.write(`${command}\n`);
  });
}
