/**
 * The CPU each request costs a server, for A/B comparisons on a noisy VM: a rate moves with the
 * minute, the microseconds a request costs much less. Each scenario is loaded at 50 connections
 * and the server's `utime + stime` (from /proc) over the run is divided by the requests answered.
 * Run it on two checkouts in turn (or alternate `git stash`) and compare the µs column.
 *
 *   node bench/cpu-per-request.ts                          # ceiling, verify*, mint, list-20
 *   node bench/cpu-per-request.ts --only ceiling,introspect,verify-bad-request
 *   node bench/cpu-per-request.ts --only ceiling,mint --rounds 4 --duration 5
 *   node bench/cpu-per-request.ts --only ceiling,create --notes 1000   # POST /api/notes
 *   node bench/cpu-per-request.ts --only search                # the search of `npm run bench`
 *   node bench/cpu-per-request.ts --only create --notes 1000 --cpu-prof /tmp/profiles
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/cpu-per-request.ts
 *
 * With `DATABASE_URL` the services run on PostgreSQL (fresh databases, dropped at the end, as in
 * `npm run bench`), and each line adds the CPU the database server's processes used per request
 * (every process of the user the server runs as, when it runs on this machine).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { SEARCH_TERM, seedNotes } from "./seed-notes.ts";
import {
  benchIdentityEnv,
  createBenchDatabases,
  NODE_FLAGS,
  runCommand,
  type Server,
  startServer,
  warmCompileCache,
} from "./servers.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "2" },
    duration: { type: "string", default: "5" },
    notes: { type: "string", default: "100000" },
    only: { type: "string", default: "ceiling,verify,mint,list-20" },
    "cpu-prof": { type: "string" },
  },
});
// With `--cpu-prof <folder>`, each service writes a V8 CPU profile there when it stops.
const profileFlags = values["cpu-prof"]
  ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof"]}`]
  : [];
const only = values.only.split(",");
const duration = Number(values.duration);
const work = mkdtempSync(join(tmpdir(), "agentpass-cpu-"));
const servers: Server[] = [];
const start = async (name: string, args: string[], env: Record<string, string>) => {
  const server = await startServer(name, args, env);
  servers.push(server);
  return server;
};

const databases = await createBenchDatabases(process.env.DATABASE_URL);
const databaseServer = databases.identity ? databaseServerUser() : undefined;
try {
  const identityEnv = benchIdentityEnv(work, databases.identity);
  await warmCompileCache();
  const ceiling = await start("ceiling", ["bench/ceiling-server.ts"], {});
  const identity = await start(
    "identity",
    [...NODE_FLAGS.identity, ...profileFlags, "apps/identity/src/bin.ts", "serve"],
    identityEnv,
  );
  const admin = (...args: string[]) =>
    runCommand(["apps/identity/src/bin.ts", ...args], identityEnv);
  await admin("accounts", "create", "bench-user@example.com");
  const userKey = await admin("user-keys", "create", "bench-user@example.com");
  await admin("accounts", "create", "bench-partner@example.com");
  const partnerId = await admin(
    "partners",
    "create",
    "--name",
    "Bench",
    "--owner",
    "bench-partner@example.com",
  );
  const partnerKey = JSON.parse(await admin("partner-keys", "create", partnerId, "--json")).key;
  const minted = await fetch(`${identity.url}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}` },
  });
  const token = ((await minted.json()) as { sessionToken: string }).sessionToken;
  const body = JSON.stringify({ sessionToken: token });

  let notes: Server | undefined;
  if (["list-20", "search", "create"].some((name) => only.includes(name))) {
    const notesEnv = {
      DATA_DIR: join(work, "notes"),
      DATABASE_URL: databases.notes ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      AGENTPASS_URL: identity.url,
      AGENTPASS_PARTNER_KEY: partnerKey,
      // Creates are counted against caps they never reach (as in `npm run bench`).
      MAX_NOTES_PER_USER: "10000000",
      MAX_TEXT_BYTES_PER_USER: String(10 * 1024 ** 3),
    };
    await seedNotes(
      { databaseUrl: databases.notes, dataDir: notesEnv.DATA_DIR },
      "bench-user@example.com",
      Number(values.notes),
    );
    notes = await start(
      "notes",
      [...NODE_FLAGS.notes, ...profileFlags, "apps/notes/src/bin.ts", "serve"],
      notesEnv,
    );
  }
  const listUrl = notes && `${notes.url}/api/notes?limit=20`;
  const listBytes = listUrl
    ? (await (await fetch(listUrl, { headers: { "x-session-token": token } })).arrayBuffer())
        .byteLength
    : 0;
  const json = { "content-type": "application/json" };
  const scenarios = [
    { name: "ceiling", server: ceiling, url: `${ceiling.url}/`, headers: json, body },
    {
      name: "verify",
      server: identity,
      url: `${identity.url}/api/verify`,
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      body,
    },
    {
      name: "verify-bad-request",
      server: identity,
      url: `${identity.url}/api/verify`,
      headers: { ...json, authorization: `Bearer ${partnerKey}` },
      body: "not json",
    },
    {
      name: "introspect",
      server: identity,
      url: `${identity.url}/oauth/introspect`,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Bearer ${partnerKey}`,
      },
      body: new URLSearchParams({ token }).toString(),
    },
    {
      name: "mint",
      server: identity,
      url: `${identity.url}/api/session-tokens`,
      headers: { authorization: `Bearer ${userKey}` },
    },
    // The list is compared with a ceiling writing as many bytes, as in `npm run bench`.
    ...(notes && listUrl
      ? [
          {
            name: "ceiling-list",
            server: ceiling,
            url: `${ceiling.url}/?bytes=${listBytes}`,
            headers: json,
            body,
          },
          {
            name: "list-20",
            server: notes,
            url: listUrl,
            method: "GET" as const,
            headers: { "x-session-token": token },
          },
          {
            // The full-text search of `npm run bench`: 2,000 matches (seed-notes.ts), a page of 20.
            name: "search",
            server: notes,
            url: `${notes.url}/api/notes?search=${SEARCH_TERM}&limit=20`,
            method: "GET" as const,
            headers: { "x-session-token": token },
          },
          {
            name: "create",
            server: notes,
            url: `${notes.url}/api/notes`,
            headers: { ...json, "x-session-token": token },
            body: JSON.stringify({ title: "A bench note", contentText: "written by the bench" }),
          },
        ]
      : []),
  ].filter((scenario) => only.some((name) => scenario.name.startsWith(name)));

  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const scenario of scenarios) {
      const before = cpuMicroseconds(scenario.server.pid);
      const databaseBefore =
        databaseServer === undefined ? undefined : databaseServerCpu(databaseServer);
      const result = await autocannon({
        url: scenario.url,
        method: "method" in scenario ? scenario.method : "POST",
        headers: scenario.headers,
        body: scenario.body,
        connections: 50,
        duration,
      });
      const used = cpuMicroseconds(scenario.server.pid) - before;
      const answered = result.requests.total;
      const database =
        databaseServer !== undefined && scenario.server !== ceiling
          ? `  database ${(cpuSince(databaseBefore ?? new Map(), databaseServerCpu(databaseServer)) / answered).toFixed(1)} µs/request`
          : "";
      console.log(
        `round ${round} ${scenario.name.padEnd(12)} ${String(Math.round(result.requests.average)).padStart(6)} req/s` +
          `  p50 ${result.latency.p50} p90 ${result.latency.p90} p97.5 ${result.latency.p97_5} p99 ${result.latency.p99} mean ${result.latency.mean} ms  ${(used / answered).toFixed(1)} µs/request` +
          `  (${Math.round(used / 10_000 / duration)} % of a core)${database}  non-2xx ${result.non2xx}`,
      );
    }
  }
} finally {
  await Promise.all(servers.map((server) => server.stop()));
  await databases.drop();
  rmSync(work, { recursive: true, force: true });
}

/** A process's user + system CPU time so far, in µs (clock ticks of 10 ms, as Linux counts). */
function cpuMicroseconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** The uid the local PostgreSQL server runs as: the owner of its postmaster's process. */
function databaseServerUser(): number | undefined {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "postgres") {
        return statSync(`/proc/${pid}`).uid;
      }
    } catch {
      // The process ended while it was read.
    }
  }
  return undefined;
}

/** The CPU time so far of each process of `uid` (the database server's), in µs, by pid. */
function databaseServerCpu(uid: number): Map<string, number> {
  const used = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (statSync(`/proc/${pid}`).uid === uid) used.set(pid, cpuMicroseconds(Number(pid)));
    } catch {
      // The process ended while it was read.
    }
  }
  return used;
}

/**
 * The CPU the processes of `after` used since `before`, in µs; a process started since counts
 * from 0, and one that ended in between is not counted (its time can no longer be read).
 */
function cpuSince(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [pid, used] of after) total += used - (before.get(pid) ?? 0);
  return total;
}
