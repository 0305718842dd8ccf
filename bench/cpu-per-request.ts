/**
 * The CPU each request costs a server, for A/B comparisons on a noisy VM: a rate moves with the
 * minute, the microseconds a request costs much less. Each scenario is loaded at 50 connections
 * and the server's `utime + stime` (from /proc) over the run is divided by the requests answered.
 * Run it on two checkouts in turn (or alternate `git stash`) and compare the µs column.
 *
 *   node bench/cpu-per-request.ts                          # ceiling, verify, mint, list-20
 *   node bench/cpu-per-request.ts --only ceiling,mint --rounds 4 --duration 5
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { seedNotes } from "./seed-notes.ts";
import { runCommand, SERVICE_NODE_FLAGS, type Server, startServer } from "./servers.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "2" },
    duration: { type: "string", default: "5" },
    notes: { type: "string", default: "100000" },
    only: { type: "string", default: "ceiling,verify,mint,list-20" },
  },
});
const only = values.only.split(",");
const duration = Number(values.duration);
const work = mkdtempSync(join(tmpdir(), "agentpass-cpu-"));
const servers: Server[] = [];
const start = async (name: string, args: string[], env: Record<string, string>) => {
  const server = await startServer(name, args, env);
  servers.push(server);
  return server;
};

try {
  const identityEnv = {
    DATA_DIR: join(work, "identity"),
    DATABASE_URL: "",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    MINTS_PER_MINUTE: "1000000000",
    FAILED_VERIFIES_PER_MINUTE: "1000000000",
  };
  const ceiling = await start("ceiling", ["bench/ceiling-server.ts"], {});
  const identity = await start(
    "identity",
    [...SERVICE_NODE_FLAGS, "apps/identity/src/bin.ts", "serve"],
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
  if (only.includes("list-20")) {
    const notesEnv = {
      DATA_DIR: join(work, "notes"),
      DATABASE_URL: "",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      AGENTPASS_URL: identity.url,
      AGENTPASS_PARTNER_KEY: partnerKey,
    };
    await seedNotes(
      { databaseUrl: undefined, dataDir: notesEnv.DATA_DIR },
      "bench-user@example.com",
      Number(values.notes),
    );
    notes = await start(
      "notes",
      [...SERVICE_NODE_FLAGS, "apps/notes/src/bin.ts", "serve"],
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
          { name: "list-20", server: notes, url: listUrl, headers: { "x-session-token": token } },
        ]
      : []),
  ].filter((scenario) => only.some((name) => scenario.name.startsWith(name)));

  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const scenario of scenarios) {
      const before = cpuMicroseconds(scenario.server.pid);
      const result = await autocannon({
        url: scenario.url,
        method: scenario.name === "list-20" ? "GET" : "POST",
        headers: scenario.headers,
        body: scenario.body,
        connections: 50,
        duration,
      });
      const used = cpuMicroseconds(scenario.server.pid) - before;
      const answered = result.requests.total;
      console.log(
        `round ${round} ${scenario.name.padEnd(12)} ${String(Math.round(result.requests.average)).padStart(6)} req/s` +
          `  p99 ${result.latency.p99} ms  ${(used / answered).toFixed(1)} µs/request` +
          `  (${Math.round(used / 10_000 / duration)} % of a core)  non-2xx ${result.non2xx}`,
      );
    }
  }
} finally {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(work, { recursive: true, force: true });
}

/** A process's user + system CPU time so far, in µs (clock ticks of 10 ms, as Linux counts). */
function cpuMicroseconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
