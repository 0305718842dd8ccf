import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { Engine, OpenedDatabase, SqliteHandles } from "./open-database.ts";

export type { Engine };

/**
 * The engines a test suite runs on: SQLite always, PostgreSQL too when `TEST_DATABASE_URL` is
 * set. When it is set and the server cannot be reached, the suite fails rather than skips.
 * `TEST_ENGINES=postgres` (or `sqlite`) narrows the run to one engine.
 */
export function testEngines(): Engine[] {
  const all: Engine[] = process.env.TEST_DATABASE_URL ? ["sqlite", "postgres"] : ["sqlite"];
  const only = process.env.TEST_ENGINES?.split(",").map((name) => name.trim());
  if (!only) return all;
  if (only.includes("postgres") && !process.env.TEST_DATABASE_URL) {
    throw new Error("TEST_ENGINES names postgres but TEST_DATABASE_URL is not set");
  }
  return all.filter((engine) => only.includes(engine));
}

export interface TestDatabase {
  engine: Engine;
  /** Set for PostgreSQL: a freshly created database of its own. */
  databaseUrl: string | undefined;
  /** A fresh temporary folder (the SQLite file lives here). */
  dataDir: string;
  /** Drops the database and removes the folder. */
  drop(): Promise<void>;
}

/** Creates an empty database on `engine` that nothing else uses, to be dropped after the test. */
export async function createTestDatabase(engine: Engine): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), "agentpass-test-"));
  if (engine === "sqlite") {
    return {
      engine,
      databaseUrl: undefined,
      dataDir,
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error("TEST_DATABASE_URL is required for PostgreSQL tests");
  const name = `agentpass_test_${randomBytes(6).toString("hex")}`;
  await withAdminClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    engine,
    databaseUrl: url.toString(),
    dataDir,
    drop: async () => {
      await withAdminClient(adminUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      );
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function withAdminClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * A TCP proxy in front of the PostgreSQL of `databaseUrl` that can play a stopped or a hung
 * server: connect through `proxy.databaseUrl`; see `startTcpProxy` for `stop`, `start`, `stall`
 * and `resume`. The real server is never touched, so the suites running beside this one are not
 * disturbed.
 */
export async function startDatabaseProxy(databaseUrl: string) {
  const direct = new URL(databaseUrl);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(direct);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  return { ...proxy, databaseUrl: viaProxy.toString() };
}

/**
 * A TCP proxy on a loopback port in front of `target`, for fault tests:
 * - `stop()` drops every open connection and closes the port (connections are refused, as by a
 *   stopped server); `start()` listens on the same port again;
 * - `stall()` stops forwarding without closing anything, in both directions and for new
 *   connections too (as a server stopped with SIGSTOP, or a network that drops packets);
 *   `resume()` delivers what was held and forwards again.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  /** Chunks held while stalled, each with the socket it is for, in arrival order. */
  let held: [Socket, Buffer][] | undefined;
  let server: Server | undefined;
  let port = 0;
  const forward = (from: Socket, to: Socket) =>
    from.on("data", (chunk: Buffer) => {
      if (held) held.push([to, chunk]);
      else to.write(chunk);
    });
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const listening = createServer((client) => {
        const backend = connect(target.port, target.host);
        for (const socket of [client, backend]) {
          sockets.add(socket);
          socket.on("error", () => {});
          socket.on("close", () => {
            sockets.delete(socket);
            client.destroy();
            backend.destroy();
          });
        }
        forward(client, backend);
        forward(backend, client);
      });
      listening.once("error", reject);
      listening.listen(port, "127.0.0.1", () => {
        port = (listening.address() as { port: number }).port;
        server = listening;
        resolve();
      });
    });
  await listen();
  return {
    port,
    async stop() {
      const closing = server;
      server = undefined;
      const closed = new Promise((resolve) => (closing ? closing.close(resolve) : resolve(null)));
      for (const socket of sockets) socket.destroy();
      held = held && [];
      await closed;
    },
    async start() {
      if (!server) await listen();
    },
    stall() {
      held ??= [];
    },
    resume() {
      const chunks = held ?? [];
      held = undefined;
      for (const [to, chunk] of chunks) if (!to.destroyed) to.write(chunk);
    },
    /** Stops the proxy for good. */
    async close() {
      this.resume();
      await this.stop();
    },
  };
}

/**
 * Debian's PgBouncer (`PGBOUNCER_PATH`, default /usr/sbin/pgbouncer) in front of the PostgreSQL
 * of `databaseUrl`, on a free loopback port, with its configuration in a temporary folder:
 * connect through `bouncer.databaseUrl` (the same database, user and password). `poolMode` is
 * its `pool_mode`; `serverConnections` its `default_pool_size`, kept small so that clients
 * share server sessions as they do in production. Run as root, it drops to `nobody`.
 */
export async function startPgBouncer(
  databaseUrl: string,
  options: { poolMode: "session" | "transaction"; serverConnections?: number },
) {
  const direct = new URL(databaseUrl);
  const dir = mkdtempSync(join(tmpdir(), "agentpass-pgbouncer-"));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(direct.username || "postgres");
  const password = decodeURIComponent(direct.password);
  const quote = (value: string) => `"${value.replace(/"/g, '""')}"`;
  const files = {
    "users.txt": `${quote(user)} ${quote(password)}\n`,
    "pgbouncer.ini": `[databases]
* = host=${direct.hostname} port=${direct.port || 5432}${password ? ` password=${password}` : ""}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, "users.txt")}
pool_mode = ${options.poolMode}
default_pool_size = ${options.serverConnections ?? 3}
max_client_conn = 500
`,
  };
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(join(dir, name), text);
    chmodSync(join(dir, name), 0o644);
  }
  const asNobody = process.getuid?.() === 0 ? ["-u", "nobody"] : [];
  const child: ChildProcess = spawn(
    process.env.PGBOUNCER_PATH ?? "/usr/sbin/pgbouncer",
    [...asNobody, join(dir, "pgbouncer.ini")],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log += chunk;
  });
  // A pgbouncer that cannot start (not installed: ENOENT) reports "error" and never "exit".
  let failed: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", (error) => {
      failed = error;
      resolve();
    });
  });
  const close = async () => {
    child.kill("SIGINT");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const viaBouncer = new URL(direct);
  viaBouncer.host = `127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    if (await canConnect(port)) break;
    if (tries >= 100 || child.exitCode !== null || failed) {
      await close();
      throw new Error(`pgbouncer did not start: ${failed?.message ?? log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    databaseUrl: viaBouncer.toString(),
    /** What PgBouncer wrote to its log so far. */
    log: () => log,
    close,
  };
}

/**
 * A TCP port free on the loopback interface now, for a server a test starts by number (an
 * haproxy, a pgbouncer, a service). Drawn below the kernel's ephemeral range
 * (`ip_local_port_range`): a port the kernel hands out (`listen(0)`, an outgoing connection) is
 * handed out again to any process once released, which then held it when the test's server
 * bound it (haproxy: "cannot bind socket (Address already in use)").
 */
export async function freePort(): Promise<number> {
  const [lowest = 32_768] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
    .trim()
    .split(/\s+/)
    .map(Number);
  const below = Math.max(LOWEST_TEST_PORT + 1000, lowest);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_TEST_PORT + randomInt(below - LOWEST_TEST_PORT);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port from ${LOWEST_TEST_PORT} to ${below}`);
}

/** The lowest port `freePort` draws: above the well-known and most registered ones. */
const LOWEST_TEST_PORT = 20_000;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The SQLite handles of `database`, for a test that reaches under the store; else throws. */
export function sqliteHandlesOf(database: Pick<OpenedDatabase<unknown>, "handles">): SqliteHandles {
  if (database.handles.engine !== "sqlite") throw new Error("the database is not SQLite");
  return database.handles;
}

export { typeErrorsIn } from "./type-errors.ts";
