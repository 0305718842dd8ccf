/**
 * The audit flood (issue 52, finding 1): partners' verify p99 alone, then during 10 s of
 * unauthenticated `POST /sign-in/code` from one address, and the audit rows the flood added.
 * Standalone, on loopback only:
 *
 *   node bench/audit-flood.ts            # SQLite
 *   DATABASE_URL=postgres://… node bench/audit-flood.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measure } from "./measure.ts";
import {
  benchIdentityEnv,
  createBenchDatabases,
  NODE_FLAGS,
  runCommand,
  type Server,
  startServer,
  warmCompileCache,
} from "./servers.ts";

const SECONDS = 10;
/** Verify's load: a few connections, so its p99 is latency, not a queue. */
const VERIFY_CONNECTIONS = 4;
/** The flooder's requests in flight at once, from one address. */
const FLOOD_CONCURRENCY = 8;

// The flooder runs as a process of its own (`--flood <url> <ms>`), so its requests do not
// share an event loop with the verify load whose latency is measured.
if (process.argv[2] === "--flood") {
  const [, , , base, ms, target] = process.argv;
  const sent = await floodSignIn(base as string, Number(ms), target === "page" ? "page" : "code");
  console.log(JSON.stringify(sent));
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), "agentpass-audit-flood-"));
const databases = await createBenchDatabases(process.env.DATABASE_URL);
const env = benchIdentityEnv(work, databases.identity);
let identity: Server | undefined;

try {
  await warmCompileCache();
  identity = await startServer(
    "identity",
    [...NODE_FLAGS.identity, "apps/identity/src/bin.ts", "serve"],
    env,
  );
  const url = identity.url;
  const admin = (...args: string[]) => runCommand(["apps/identity/src/bin.ts", ...args], env);
  await admin("accounts", "create", "flood-user@example.com");
  const userKey = await admin("user-keys", "create", "flood-user@example.com");
  const owner = "flood-partner@example.com";
  await admin("accounts", "create", owner);
  const partnerId = await admin("partners", "create", "--name", "Flood", "--owner", owner);
  const partnerKey = JSON.parse(await admin("partner-keys", "create", partnerId, "--json"))
    .key as string;
  const minted = await fetch(`${url}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}` },
  });
  const { sessionToken } = (await minted.json()) as { sessionToken: string };
  const verify = {
    name: "verify-valid",
    pid: identity.pid,
    url: `${url}/api/verify`,
    method: "POST" as const,
    headers: { "content-type": "application/json", authorization: `Bearer ${partnerKey}` },
    body: JSON.stringify({ sessionToken }),
    expect: 200,
  };

  /** The stored sign-in events: rows, and the occurrences they stand for. */
  const signInRows = async () => {
    // The CLI is another process: it sees folded repeats once the service writes them (≤ 1 s).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const events = JSON.parse(
      await admin("audit", "--json", "--action", "sign_in", "--limit", "10000"),
    ) as { occurrences?: number }[];
    const occurrences = events.reduce((sum, event) => sum + (event.occurrences ?? 1), 0);
    return { rows: events.length, occurrences };
  };

  await measure(verify, { duration: 2, connections: VERIFY_CONNECTIONS });
  const alone = await measure(verify, { duration: SECONDS, connections: VERIFY_CONNECTIONS });

  /** Verify measured while another process floods `target` (`code` or `page`). */
  const duringFlood = async (target: "code" | "page") => {
    const flood = runCommand(
      ["bench/audit-flood.ts", "--flood", url, String(SECONDS * 1000), target],
      {},
    ).then((line) => JSON.parse(line) as Awaited<ReturnType<typeof floodSignIn>>);
    const measured = await measure(verify, { duration: SECONDS, connections: VERIFY_CONNECTIONS });
    return { measured, sent: await flood };
  };
  const before = await signInRows();
  const { measured: during, sent } = await duringFlood("code");
  const after = await signInRows();
  // The control: as many requests in flight for the sign-in page, which writes nothing.
  const { measured: control, sent: pages } = await duringFlood("page");

  const statuses = Object.entries(sent.statuses)
    .map(([status, count]) => `${count} × ${status}`)
    .join(", ");
  const engine = databases.identity ? "postgres" : "sqlite";
  console.log(
    `audit flood (${engine}), ${SECONDS} s each phase, verify at ${VERIFY_CONNECTIONS} connections`,
  );
  console.log(
    `  verify alone:        p99 ${alone.p99} ms, ${Math.round(alone.requestsPerSecond)} req/s`,
  );
  console.log(
    `  verify during flood: p99 ${during.p99} ms, ${Math.round(during.requestsPerSecond)} req/s`,
  );
  console.log(`  flood: ${sent.total} POST /sign-in/code from 127.0.0.1 (${statuses})`);
  console.log(
    `  verify during ${pages.total} GET /sign-in (control, no writes): p99 ${control.p99} ms, ${Math.round(control.requestsPerSecond)} req/s`,
  );
  console.log(
    `  audit rows added: ${after.rows - before.rows} (standing for ${after.occurrences - before.occurrences} refusals)`,
  );
} finally {
  await identity?.stop();
  await databases.drop();
  rmSync(work, { recursive: true, force: true });
}

/**
 * Posts wrong sign-in codes from one browser with no open code (`code`), or gets the sign-in
 * page (`page`, the control), `FLOOD_CONCURRENCY` at a time, until `ms` have passed: a bounded
 * loop against loopback only.
 */
async function floodSignIn(base: string, ms: number, target: "code" | "page") {
  if (!["127.0.0.1", "localhost", "[::1]"].includes(new URL(base).hostname)) {
    throw new Error("the flood runs against loopback only");
  }
  const page = await fetch(`${base}/sign-in`);
  const cookie = page.headers
    .getSetCookie()
    .map((set) => set.split(";")[0])
    .join("; ");
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  const body = new URLSearchParams({ _csrf: csrf, code: "123456", next: "/keys" }).toString();
  const headers = {
    cookie,
    "content-type": "application/x-www-form-urlencoded",
    "user-agent": "AgentPass Security: this account is locked. Restore at https://evil.example/",
  };
  const statuses: Record<number, number> = {};
  let total = 0;
  const end = Date.now() + ms;
  const worker = async () => {
    while (Date.now() < end) {
      const answer =
        target === "code"
          ? await fetch(`${base}/sign-in/code`, { method: "POST", headers, body })
          : await fetch(`${base}/sign-in`, { headers: { cookie } });
      await answer.arrayBuffer();
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      total++;
    }
  };
  await Promise.all(Array.from({ length: FLOOD_CONCURRENCY }, worker));
  return { total, statuses };
}
