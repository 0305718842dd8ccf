/**
 * npm run bench — AgentPass measured against the fastest a Node.js HTTP server can be here.
 *
 *   npm run bench                              # warm-up, 5 rounds x 6 s, 50 connections, SQLite
 *   npm run bench -- --rounds 5 --duration 20
 *   npm run bench -- --only verify-valid,mint
 *   npm run bench -- --smoke                   # CI: 1 round x 1 s, checks answers, not speed
 *   DATABASE_URL=postgres://… npm run bench    # the services on PostgreSQL (fresh databases)
 *
 * Floors per engine (targets.ts): on SQLite every floor of issue 44; on PostgreSQL verify and
 * introspection over oidc-provider only, the other figures recorded.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createBenchDpopKey, dpopProof } from "./dpop-proofs.ts";
import { type Measurement, measure, median, medianOf, probe, type Scenario } from "./measure.ts";
import { printTable } from "./report.ts";
import { BOUND_VERIFY, benchScenarios, PEER, SEARCH, VERIFY } from "./scenarios.ts";
import { openSearchBound, type SearchBound } from "./search-bound.ts";
import { seedNotes } from "./seed-notes.ts";
import {
  benchIdentityEnv,
  createBenchDatabases,
  NODE_FLAGS,
  ROOT,
  runCommand,
  type Server,
  startServer,
  warmCompileCache,
} from "./servers.ts";
import { judgeTargets, printTargets, ratioText } from "./targets.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    duration: { type: "string", default: "6" },
    connections: { type: "string", default: "50" },
    notes: { type: "string", default: "100000" },
    only: { type: "string" },
    smoke: { type: "boolean", default: false },
  },
});
const smoke = values.smoke;
const rounds = smoke ? 1 : Number(values.rounds);
const duration = smoke ? 1 : Number(values.duration);
const connections = smoke ? 10 : Number(values.connections);
const noteCount = smoke ? 500 : Number(values.notes);
const only = values.only?.split(",");
/** Whether the run measures the scenario `name` (`--only`; the ceilings always run). */
const selected = (name: string) =>
  name.startsWith("ceiling") || !only || only.some((prefix) => name.startsWith(prefix));
/**
 * Before round 1 every scenario runs this long under load, unrecorded, so round 1 measures code
 * the JIT has compiled, as the later rounds do (without it, the first round of most identity
 * scenarios was their slowest). A smoke run measures nothing and skips it.
 */
const WARM_UP_SECONDS = 2;
/** Answers up to this size are compared with the bare ceiling (a verify answer's size). */
const LARGE_ANSWER_BYTES = 1024;
/**
 * One-use bodies are made for this many times the requests the scenario that paces them would
 * send in the time: the paced scenario does more, so it is slower, unless the machine turns
 * faster between the two.
 */
const ONE_USE_MARGIN = 1.5;

const work = mkdtempSync(join(tmpdir(), "agentpass-bench-"));
const servers: Server[] = [];
const databases = await createBenchDatabases(process.env.DATABASE_URL);
const engine = databases.identity ? "postgres" : "sqlite";
const identityEnv = benchIdentityEnv(work, databases.identity);
let failed = false;
let bound: SearchBound | undefined;

try {
  console.error(
    `bench: ${engine}, ${rounds} round(s) of ${duration} s at ${connections} connections`,
  );
  await warmCompileCache();
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
  // The notes the bench writes are another person's, so every round lists and searches the
  // same 100,000 notes of the first: creates of the same person would put thousands of newer
  // notes in front of the next round's lists and searches.
  await admin("accounts", "create", "bench-writer@example.com");
  const writerKey = await admin("user-keys", "create", "bench-writer@example.com");
  await admin("accounts", "create", "bench-partner@example.com");
  const partnerId = await admin(
    "partners",
    "create",
    "--name",
    "Bench",
    "--owner",
    "bench-partner@example.com",
  );
  const partnerKey = JSON.parse(await admin("partner-keys", "create", partnerId, "--json"))
    .key as string;
  const revoked = JSON.parse(await admin("partner-keys", "create", partnerId, "--json"));
  await admin("partner-keys", "revoke", revoked.id);

  const notesEnv = {
    DATA_DIR: join(work, "notes"),
    DATABASE_URL: databases.notes ?? "",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    AGENTPASS_URL: identity.url,
    AGENTPASS_PARTNER_KEY: partnerKey,
    // The writer's caps are set beyond what the run can write (5 rounds of 6 s at 10,000 creates
    // a second is 300,000 notes): like the identity limits above, they count every create and
    // refuse none.
    MAX_NOTES_PER_USER: "10000000",
    MAX_TEXT_BYTES_PER_USER: String(10 * 1024 ** 3),
  };
  console.error(`bench: seeding ${noteCount} notes`);
  const userId = await seedNotes(
    { databaseUrl: databases.notes, dataDir: notesEnv.DATA_DIR },
    "bench-user@example.com",
    noteCount,
  );
  await seedNotes(
    { databaseUrl: databases.notes, dataDir: notesEnv.DATA_DIR },
    "bench-writer@example.com",
    0,
  );
  const notes = await start(
    "notes",
    [...NODE_FLAGS.notes, "apps/notes/src/bin.ts", "serve"],
    notesEnv,
  );
  const oidc = await start("oidc-provider", ["bench/oidc-peer.ts"], {});
  if (selected(SEARCH)) bound = await openSearchBound(notesEnv, userId);

  const mint = async (key = userKey) => {
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
    });
    return ((await response.json()) as { sessionToken: string }).sessionToken;
  };
  // A token bound to the bench agent's key is minted with a proof for the service's own URL
  // (PUBLIC_URL, its issuer), as the CLI mints one.
  const dpopKey = await createBenchDpopKey();
  const { issuer } = (await (
    await fetch(`${identity.url}/.well-known/oauth-authorization-server`)
  ).json()) as { issuer: string };
  const mintBound = async () => {
    const proof = await dpopProof(dpopKey, {
      method: "POST",
      url: `${issuer}/api/session-tokens`,
    });
    const response = await fetch(`${identity.url}/api/session-tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${userKey}`, dpop: proof },
    });
    const minted = (await response.json()) as { sessionToken: string; tokenType?: string };
    if (minted.tokenType !== "DPoP") {
      throw new Error(`A mint with a DPoP proof answered ${response.status}, no bound token`);
    }
    return minted.sessionToken;
  };

  // Built before each round, so every round has fresh session tokens (they live 5 minutes).
  const scenarios = async (): Promise<Scenario[]> => {
    const list = benchScenarios(
      { ceiling, identity, notes, oidc },
      {
        token: await mint(),
        boundToken: await mintBound(),
        dpopKey,
        writerToken: await mint(writerKey),
        userKey,
        partnerKey,
        revokedPartnerKey: revoked.key,
      },
    );
    return list.filter((scenario) => selected(scenario.name));
  };

  const results = new Map<string, Measurement[]>();
  /** Scenario name → its rate over its ceiling's, one per round. */
  const ratios = new Map<string, number[]>();
  /** Scenario name → the size of its answer, for those compared with a sized ceiling. */
  const answerBytes = new Map<string, number>();
  /** Scenario name → its own connection count, for those not measured at the run's. */
  const scenarioConnections = new Map<string, number>();
  /**
   * The rates the targets take over another's than a ceiling's, round by round as the ceiling
   * ratios are: each target's name in `judgeTargets`, the scenario and the rate it is taken over.
   */
  const comparisons = {
    verifyOverPeer: ["verify-valid", PEER],
    introspectionOverPeer: ["introspect", PEER],
    searchOverBound: [SEARCH, bound?.name],
    boundVerifyOverVerify: [BOUND_VERIFY, VERIFY],
  } as const;
  const compared = new Map<keyof typeof comparisons, number[]>();
  if (!smoke) {
    const warmRates = new Map<string, number>();
    for (const scenario of await scenarios()) {
      const bodies = await oneUseBodies(scenario, warmRates, WARM_UP_SECONDS);
      const warm = await measure(scenario, { duration: WARM_UP_SECONDS, connections, bodies });
      warmRates.set(scenario.name, warm.requestsPerSecond);
    }
    await bound?.measure({ duration: WARM_UP_SECONDS, connections });
    console.error(`bench: warmed up, ${WARM_UP_SECONDS} s a scenario`);
  }
  for (let round = 1; round <= rounds; round++) {
    const [bare, ...rest] = await scenarios();
    if (!bare) throw new Error("no ceiling scenario");
    const answering: Scenario[] = [];
    for (const scenario of rest) {
      const probed = await probe(scenario);
      if (probed.status !== scenario.expect) {
        console.error(
          `bench: ${scenario.name} answered ${probed.status}, expected ${scenario.expect}`,
        );
        failed = true;
        continue;
      }
      // Sized in the first round (every round's pages are the same).
      if (round === 1 && probed.bytes > LARGE_ANSWER_BYTES && !scenario.connections) {
        answerBytes.set(scenario.name, probed.bytes);
      }
      if (scenario.connections) scenarioConnections.set(scenario.name, scenario.connections);
      answering.push(scenario);
    }
    // An answer larger than a verify answer is compared with a ceiling writing as many bytes.
    const sized = new Map<string, Scenario>();
    for (const scenario of answering) {
      const bytes = answerBytes.get(scenario.name);
      if (bytes === undefined) continue;
      scenario.ceiling = sizedCeilingName(bytes);
      sized.set(scenario.ceiling, {
        ...bare,
        name: scenario.ceiling,
        url: `${ceiling.url}/?bytes=${bytes}`,
      });
    }
    // Each sized ceiling runs just before the scenarios compared with it, and each ratio is
    // taken within the round: on a shared machine a ceiling's rate drifts from one minute to the
    // next, so a scenario is compared with a ceiling measured as close to it as can be.
    const order = [
      bare,
      ...answering.filter((scenario) => !scenario.ceiling),
      ...[...sized.values()].flatMap((sizedCeiling) => [
        sizedCeiling,
        ...answering.filter((scenario) => scenario.ceiling === sizedCeiling.name),
      ]),
    ];
    // The table lists the ceilings first, then the scenarios in the order written above, the
    // search's bound just before the search.
    for (const scenario of [bare, ...sized.values(), ...answering]) {
      if (bound && scenario.name === SEARCH) results.set(bound.name, results.get(bound.name) ?? []);
      if (!results.has(scenario.name)) results.set(scenario.name, []);
    }
    const thisRound = new Map<string, Measurement>();
    const record = (name: string, measurement: Measurement) => {
      if (measurement.errors > 0) failed = true;
      thisRound.set(name, measurement);
      results.set(name, [...(results.get(name) ?? []), measurement]);
      console.error(
        `bench: round ${round} ${name}: ${Math.round(measurement.requestsPerSecond)} req/s`,
      );
    };
    for (const scenario of order) {
      // The bound runs just before the search, as a sized ceiling before its scenarios.
      if (bound && scenario.name === SEARCH) {
        record(bound.name, await bound.measure({ duration, connections }));
      }
      const rates = new Map([...thisRound].map(([name, m]) => [name, m.requestsPerSecond]));
      const bodies = await oneUseBodies(scenario, rates, duration);
      const measurement = await measure(scenario, { duration, connections, bodies });
      record(scenario.name, measurement);
      const ceilingRate = scenario.connections
        ? undefined
        : thisRound.get(scenario.ceiling ?? bare.name)?.requestsPerSecond;
      if (ceilingRate) {
        const ratio = measurement.requestsPerSecond / ceilingRate;
        ratios.set(scenario.name, [...(ratios.get(scenario.name) ?? []), ratio]);
      }
    }
    for (const [key, [name, over]] of Object.entries(comparisons)) {
      const rate = thisRound.get(name)?.requestsPerSecond;
      const overRate = over === undefined ? undefined : thisRound.get(over)?.requestsPerSecond;
      if (rate === undefined || !overRate) continue;
      const target = key as keyof typeof comparisons;
      compared.set(target, [...(compared.get(target) ?? []), rate / overRate]);
    }
  }

  const medians = [...results].map(([name, measured]) => {
    const bytes = answerBytes.get(name);
    const own = scenarioConnections.get(name);
    const ceiling = own ? "none" : bytes === undefined ? undefined : sizedCeilingName(bytes);
    const ratio = ratios.has(name) ? medianOf(ratios.get(name) ?? []) : undefined;
    return { name, ceiling, ratio, ...median(measured) };
  });
  printTable(medians, { engine, rounds, duration, connections, notes: noteCount });
  console.log("");
  for (const [key, [name, over]] of Object.entries(comparisons)) {
    const taken = compared.get(key as keyof typeof comparisons) ?? [];
    if (taken.length === 0) continue;
    console.log(
      `${name} over ${over}: ${ratioText(medianOf(taken))} × (rounds: ${taken
        .map(ratioText)
        .join(", ")})`,
    );
  }
  const proofCost = proofCheckMicros(medians);
  if (proofCost !== undefined) {
    console.log(
      `the proof check: ${proofCost.toFixed(0)} µs of the service a request (1 / ${BOUND_VERIFY}'s rate - 1 / ${VERIFY}'s)`,
    );
  }
  const overOther = (key: keyof typeof comparisons) => {
    const taken = compared.get(key) ?? [];
    return taken.length > 0 ? medianOf(taken) : undefined;
  };
  const targets = judgeTargets(
    medians,
    {
      verifyOverPeer: overOther("verifyOverPeer"),
      introspectionOverPeer: overOther("introspectionOverPeer"),
      searchOverBound: overOther("searchOverBound"),
    },
    engine,
  );
  // A smoke run (1 s, 10 connections, 500 notes) measures nothing the targets speak of.
  if (!smoke) printTargets(targets, engine);
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  const file = join(
    ROOT,
    "bench",
    "results",
    `${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
  );
  writeFileSync(
    file,
    JSON.stringify(
      {
        machine: {
          cpus: cpus().length,
          cpu: cpus()[0]?.model,
          memoryGb: totalmem() / 2 ** 30,
          node: process.version,
        },
        options: { engine, rounds, duration, connections, notes: noteCount },
        medians,
        comparisons: Object.fromEntries(compared),
        proofCheckMicros: proofCost,
        targets,
        rounds: Object.fromEntries(results),
      },
      null,
      2,
    ),
  );
  console.error(`bench: raw figures in ${file}`);
} finally {
  await bound?.close();
  await Promise.all(servers.map((server) => server.stop()));
  await databases.drop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);

/**
 * A scenario's one-use bodies, made now (none for a scenario that sends one body): as many as
 * it could send in `seconds` at the rate its pacing scenario was just measured at, else the
 * fastest measured before it (the bare ceiling, always measured first), with a margin, and two
 * for each connection (autocannon builds a connection's first request before it starts).
 */
async function oneUseBodies(
  scenario: Scenario,
  rates: ReadonlyMap<string, number>,
  seconds: number,
): Promise<string[] | undefined> {
  const oneUse = scenario.oneUseBodies;
  if (!oneUse) return undefined;
  const pace = rates.get(oneUse.pacedBy) ?? Math.max(...rates.values());
  return oneUse.make(Math.ceil(pace * seconds * ONE_USE_MARGIN) + 2 * connections);
}

/**
 * What checking a proof adds to a verify, in µs: at saturation a rate is the inverse of the
 * service's time a request, so the difference of the inverses of the bound and the unbound
 * verify is the time the proof (its signature, claims and one-time jti) takes.
 */
function proofCheckMicros(rows: { name: string; requestsPerSecond: number }[]) {
  const rate = (name: string) => rows.find((row) => row.name === name)?.requestsPerSecond;
  const bound = rate(BOUND_VERIFY);
  const unbound = rate(VERIFY);
  if (!bound || !unbound) return undefined;
  return 1e6 / bound - 1e6 / unbound;
}

function sizedCeilingName(bytes: number): string {
  return `ceiling, ${(bytes / 1024).toFixed(1)} KB answer`;
}

async function start(name: string, args: string[], env: Record<string, string>): Promise<Server> {
  const server = await startServer(name, args, env);
  servers.push(server);
  return server;
}
