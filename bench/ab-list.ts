/**
 * An A/B run of one notes URL on two checkouts at once, for a change too small to see across
 * separate runs on a noisy VM: this checkout's notes service ("new") and another checkout's
 * ("old", e.g. a `git worktree` of the commit before) serve copies of the same seeded database,
 * through one identity service, and are loaded in turn, alternating which goes first, each
 * round next to a ceiling writing as many bytes. Prints, per round and as medians, requests per
 * second, the service's CPU per request (user + system, from /proc) and the ratio to the ceiling.
 *
 *   git worktree add /tmp/old HEAD~1 && ln -s "$PWD/node_modules" /tmp/old/node_modules
 *   node bench/ab-list.ts --old /tmp/old                      # GET /api/notes?limit=20, 7 rounds
 *   node bench/ab-list.ts --old /tmp/old --path '/api/notes?search=zeppelin&limit=20'
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { seedNotes } from "./seed-notes.ts";
import { NODE_FLAGS, runCommand, type Server, startServer } from "./servers.ts";

const { values } = parseArgs({
  options: {
    old: { type: "string" },
    path: { type: "string", default: "/api/notes?limit=20" },
    rounds: { type: "string", default: "7" },
    duration: { type: "string", default: "5" },
    notes: { type: "string", default: "100000" },
  },
});
if (!values.old) throw new Error("--old <the other checkout> is required");
const oldRoot = resolve(values.old);
const duration = Number(values.duration);
const work = mkdtempSync(join(tmpdir(), "agentpass-ab-"));
const servers: Server[] = [];
const start = async (name: string, args: string[], env: Record<string, string>) => {
  const server = await startServer(name, args, env);
  servers.push(server);
  return server;
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;

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
    [...NODE_FLAGS.identity, "apps/identity/src/bin.ts", "serve"],
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
    "AB",
    "--owner",
    "bench-partner@example.com",
  );
  const partnerKey = JSON.parse(await admin("partner-keys", "create", partnerId, "--json")).key;
  // Session tokens live 5 minutes: each round gets a new one.
  const mint = async () => {
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}` },
    });
    return ((await response.json()) as { sessionToken: string }).sessionToken;
  };

  const seeded = join(work, "seeded");
  await seedNotes(
    { databaseUrl: undefined, dataDir: seeded },
    "bench-user@example.com",
    Number(values.notes),
  );
  const sides: Record<"new" | "old", Server> = {} as never;
  for (const side of ["new", "old"] as const) {
    const dataDir = join(work, side);
    mkdirSync(dataDir);
    copyFileSync(join(seeded, "notes.sqlite"), join(dataDir, "notes.sqlite"));
    const bin = side === "new" ? "apps/notes/src/bin.ts" : join(oldRoot, "apps/notes/src/bin.ts");
    sides[side] = await start(side, [...NODE_FLAGS.notes, bin, "serve"], {
      DATA_DIR: dataDir,
      DATABASE_URL: "",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      AGENTPASS_URL: identity.url,
      AGENTPASS_PARTNER_KEY: partnerKey,
    });
  }

  const load = (url: string, token?: string) =>
    autocannon({
      url,
      ...(token ? { headers: { "x-session-token": token } } : { method: "POST", body: "{}" }),
      connections: 50,
      duration,
    });
  let token = await mint();
  const answers = await Promise.all(
    (["new", "old"] as const).map(async (side) => {
      const response = await fetch(`${sides[side].url}${values.path}`, {
        headers: { "x-session-token": token },
      });
      return `${response.status} ${await response.text()}`;
    }),
  );
  const bytes = Buffer.byteLength(answers[0]?.slice(4) ?? "");
  console.log(
    `${values.path}: ${bytes} bytes; same answer from both: ${answers[0] === answers[1]}`,
  );
  for (const side of ["new", "old"] as const) await load(`${sides[side].url}${values.path}`, token);

  const figures = {
    new: { cpu: [] as number[], ratio: [] as number[] },
    old: { cpu: [] as number[], ratio: [] as number[] },
  };
  for (let round = 1; round <= Number(values.rounds); round++) {
    token = await mint();
    const ceilingRate = (await load(`${ceiling.url}/?bytes=${bytes}`)).requests.average;
    for (const side of round % 2 ? (["new", "old"] as const) : (["old", "new"] as const)) {
      const before = cpuMicroseconds(sides[side].pid);
      const result = await load(`${sides[side].url}${values.path}`, token);
      const perRequest = (cpuMicroseconds(sides[side].pid) - before) / result.requests.total;
      const ratio = result.requests.average / ceilingRate;
      figures[side].cpu.push(perRequest);
      figures[side].ratio.push(ratio);
      console.log(
        `round ${round} ${side}  ${Math.round(result.requests.average)} req/s  p99 ${result.latency.p99} ms` +
          `  ${perRequest.toFixed(1)} µs/request  ${ratio.toFixed(3)} × ceiling (${Math.round(ceilingRate)} req/s)` +
          `  non-2xx ${result.non2xx}`,
      );
    }
  }
  for (const side of ["new", "old"] as const) {
    console.log(
      `median ${side}: ${median(figures[side].cpu).toFixed(1)} µs/request, ${median(figures[side].ratio).toFixed(3)} × ceiling`,
    );
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
