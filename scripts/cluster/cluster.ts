import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createTestDatabase,
  freePort,
  startDatabaseProxy,
  startTcpProxy,
} from "@agentpass/db/testing";
import { Redis } from "ioredis";
import { type Haproxy, startHaproxy } from "./haproxy.ts";
import { type ServiceInstance, startInstance } from "./instance.ts";
import type { Seed } from "./seed.ts";

const IDENTITY_BIN = fileURLToPath(new URL("../../apps/identity/src/bin.ts", import.meta.url));
const NOTES_BIN = fileURLToPath(new URL("../../apps/notes/src/bin.ts", import.meta.url));
const SEED = fileURLToPath(new URL("./seed.ts", import.meta.url));

/** Mints one user key may make per minute, on every identity instance. */
export const MINTS_PER_MINUTE = 10;

type TcpProxy = Awaited<ReturnType<typeof startTcpProxy>>;

/** An instance with the proxies it reaches PostgreSQL (and Redis) through, to stall or cut. */
export interface Member {
  instance: ServiceInstance;
  database: TcpProxy;
  redis?: TcpProxy;
}

export interface Cluster {
  /** The haproxy frontends. */
  identityUrl: string;
  notesUrl: string;
  identity: Member[];
  notes: Member[];
  haproxy: Haproxy;
  seed: Seed;
  /** The cluster's own Redis database (a db index of its own), for its clock and counters. */
  redis: Redis;
  /** `agentpass-server <args>` against the identity database, as an operator runs it. */
  adminCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

/**
 * 3 identity instances and 2 notes instances as real processes, on one PostgreSQL database each
 * (created for this run) and one Redis database index, each instance through TCP proxies of its
 * own, behind one haproxy with a frontend per service.
 *
 * `adminUrl` is a PostgreSQL URL allowed to create databases; `redisUrl` a Redis server, whose
 * database `redisDb` is emptied at the start and at the end.
 */
export async function startCluster(options: {
  adminUrl: string;
  redisUrl: string;
  redisDb: number;
}): Promise<Cluster> {
  // Everything started so far, stopped in reverse order on close or on a failed start.
  const cleanups: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    cleanups.length = 0;
  };
  try {
    process.env.TEST_DATABASE_URL = options.adminUrl; // where createTestDatabase creates them
    const identityDb = await createTestDatabase("postgres");
    cleanups.push(() => identityDb.drop());
    const notesDb = await createTestDatabase("postgres");
    cleanups.push(() => notesDb.drop());

    const redisTarget = new URL(options.redisUrl);
    const redis = new Redis({
      host: redisTarget.hostname,
      port: Number(redisTarget.port || 6379),
      db: options.redisDb,
      lazyConnect: true,
      // This connection goes to Redis itself, never through a proxy: it has no outage to ride.
      retryStrategy: (times) => (times > 5 ? null : 200),
    });
    await redis.connect().catch((error: unknown) => {
      redis.disconnect();
      throw error;
    });
    await redis.flushdb();
    cleanups.push(async () => {
      await redis.flushdb();
      await redis.quit();
    });

    const secret = randomBytes(32).toString("base64url");
    const dataDir = mkdtempSync(join(tmpdir(), "agentpass-cluster-"));
    cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const ports = { identity: await freePort(), notes: await freePort() };
    const identityUrl = `http://127.0.0.1:${ports.identity}`;
    const notesUrl = `http://127.0.0.1:${ports.notes}`;

    const seed = JSON.parse(
      await runNode(SEED, {
        DATABASE_URL: identityDb.databaseUrl as string,
        NOTES_DATABASE_URL: notesDb.databaseUrl as string,
        AGENTPASS_SECRET: secret,
        NOTES_PUBLIC_URL: notesUrl,
      }).then((run) => {
        if (run.code !== 0) throw new Error(`seeding failed: ${run.stderr}`);
        return run.stdout;
      }),
    ) as Seed;

    const common = {
      DATA_DIR: dataDir,
      LOG_LEVEL: "warn",
      // Five instances and the suites running beside this one share one PostgreSQL.
      DATABASE_POOL_SIZE: "4",
      TRUST_PROXY: "127.0.0.1/32",
    };
    const startMember = async (
      name: string,
      service: "identity" | "notes",
      databaseUrl: string,
    ): Promise<Member> => {
      const database = await startDatabaseProxy(databaseUrl);
      cleanups.push(() => database.close());
      let env: Record<string, string>;
      let redisProxy: TcpProxy | undefined;
      if (service === "identity") {
        redisProxy = await startTcpProxy({
          host: redisTarget.hostname,
          port: Number(redisTarget.port || 6379),
        });
        cleanups.push(() => (redisProxy as TcpProxy).close());
        env = {
          ...common,
          DATABASE_URL: database.databaseUrl,
          REDIS_URL: `redis://127.0.0.1:${redisProxy.port}/${options.redisDb}`,
          AGENTPASS_SECRET: secret,
          PUBLIC_URL: identityUrl,
          MINTS_PER_MINUTE: String(MINTS_PER_MINUTE),
          // The tests send revoked keys and refused tokens by the hundred on purpose.
          FAILED_VERIFIES_PER_MINUTE: "1000000",
          BAD_KEYS_PER_MINUTE: "1000000",
        };
      } else {
        env = {
          ...common,
          DATABASE_URL: database.databaseUrl,
          AGENTPASS_URL: identityUrl,
          AGENTPASS_PARTNER_KEY: seed.notesPartnerKey.key,
          PUBLIC_URL: notesUrl,
        };
      }
      const bin = service === "identity" ? IDENTITY_BIN : NOTES_BIN;
      const instance = await startInstance({ name, service, bin, port: await freePort(), env });
      cleanups.push(() => instance.stop());
      return { instance, database, redis: redisProxy };
    };

    // The three identity instances start at once, as a deploy starts them.
    const identity = await Promise.all(
      [1, 2, 3].map((n) =>
        startMember(`identity-${n}`, "identity", identityDb.databaseUrl as string),
      ),
    );
    const notes = await Promise.all(
      [1, 2].map((n) => startMember(`notes-${n}`, "notes", notesDb.databaseUrl as string)),
    );
    const haproxy = await startHaproxy([
      { name: "identity", port: ports.identity, servers: identity.map(asServer) },
      { name: "notes", port: ports.notes, servers: notes.map(asServer) },
    ]);
    cleanups.push(() => haproxy.close());

    return {
      identityUrl,
      notesUrl,
      identity,
      notes,
      haproxy,
      seed,
      redis,
      adminCli: (args) =>
        runNode(
          IDENTITY_BIN,
          {
            DATABASE_URL: identityDb.databaseUrl as string,
            AGENTPASS_SECRET: secret,
            DATA_DIR: dataDir,
            LOG_LEVEL: "warn",
          },
          args,
        ),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

function asServer(member: Member) {
  return { name: member.instance.name, port: member.instance.port };
}

/** Runs a Node script to its end with `env` (and PATH); its exit code and output. */
function runNode(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}
