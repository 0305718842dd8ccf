import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  call,
  createNote,
  mint,
  mintToken,
  type Reply,
  readAllNotes,
  refusal,
  took,
  verify,
} from "./client.ts";
import { type Cluster, type Member, MINTS_PER_MINUTE, startCluster } from "./cluster.ts";
import { type DashboardKey, openDashboard } from "./dashboard.ts";
import { proveDatabaseFault } from "./database-fault.ts";
import {
  PARTNER_KEY_REVOKED,
  RATE_LIMITED,
  REDIS_DEADLINE_MS,
  SLACK_MS,
  TOKEN_REFUSED,
  USER_KEY_REVOKED,
} from "./expected.ts";
import { countServers, countStatuses, describeFailure, type LoadReply, startLoad } from "./load.ts";
import { awaitFreshWindow, redisCountingDelay, reportErrorLogs, sleep } from "./observe.ts";

const ADMIN_URL = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.TEST_REDIS_URL || "redis://127.0.0.1:6379";
/** The Redis database index of the cluster's counters, emptied at its start and end. */
const REDIS_DB = Number(process.env.CLUSTER_REDIS_DB || 7);

describe("3 identity and 2 notes instances behind haproxy, on one PostgreSQL and one Redis", () => {
  let cluster: Cluster;
  before(async () => {
    const started = performance.now();
    cluster = await startCluster({ adminUrl: ADMIN_URL, redisUrl: REDIS_URL, redisDb: REDIS_DB });
    console.log(`# cluster started in ${Math.round(performance.now() - started)} ms`);
  });
  after(async () => {
    if (cluster) reportErrorLogs(cluster);
    await cluster?.close();
  });

  /** `agentpass-server <args>`, run to its end: the moment it said "revoked" acknowledges it. */
  async function revokeWithCli(args: string[]) {
    const started = performance.now();
    const run = await cluster.adminCli(args);
    const acknowledgedAt = performance.now();
    assert.deepEqual({ code: run.code, stdout: run.stdout.trim() }, { code: 0, stdout: "revoked" });
    return { acknowledgedAt, ms: Math.round(acknowledgedAt - started) };
  }

  it("refuses a revoked user key's token and a revoked partner key on the next verify of every instance, under load", async (t) => {
    const { seed, identityUrl } = cluster;
    const partnerKey = seed.partnerKeys.steady.key;
    const doomedPartnerKey = seed.partnerKeys.revokedUnderLoad.key;
    const doomedUserKey = seed.userKeys.revokedUnderLoad;
    const doomedToken = await mintToken(identityUrl, doomedUserKey.key);
    const steadyToken = await mintToken(identityUrl, seed.userKeys.steady.key);
    // Every instance has verified both before: their key caches hold both keys as live.
    for (const { instance } of cluster.identity) {
      assert.equal((await verify(instance.url, partnerKey, doomedToken)).status, 200);
      assert.equal((await verify(instance.url, doomedPartnerKey, steadyToken)).status, 200);
    }
    const userLoop = () => verify(identityUrl, partnerKey, doomedToken);
    const partnerLoop = () => verify(identityUrl, doomedPartnerKey, steadyToken);
    const load = startLoad(
      {
        "user-1": userLoop,
        "user-2": userLoop,
        "partner-1": partnerLoop,
        "partner-2": partnerLoop,
      },
      { pauseMs: 5 },
    );
    const directly = (ask: (url: string) => Promise<Reply>) =>
      Promise.all(cluster.identity.map(({ instance }) => ask(instance.url)));
    await sleep(1000);
    const userRevoked = await revokeWithCli(["user-keys", "revoke", doomedUserKey.id]);
    const nextVerifies = await directly((url) => verify(url, partnerKey, doomedToken));
    const nextMints = await directly((url) => mint(url, doomedUserKey.key));
    await sleep(1000);
    const partnerKeyId = seed.partnerKeys.revokedUnderLoad.id;
    const partnerRevoked = await revokeWithCli(["partner-keys", "revoke", partnerKeyId]);
    const nextPartnerVerifies = await directly((url) => verify(url, doomedPartnerKey, steadyToken));
    await sleep(1000);
    const replies = await load.stop();

    t.diagnostic(
      `admin CLI took ${userRevoked.ms} ms (user key) and ${partnerRevoked.ms} ms (partner key); ` +
        `the next direct requests to the 3 instances: verify ${countStatuses(nextVerifies)}, ` +
        `mint ${countStatuses(nextMints)}; with the partner key ${countStatuses(nextPartnerVerifies)}`,
    );
    for (const [index, { instance }] of cluster.identity.entries()) {
      const where = `${instance.name}, directly`;
      assert.deepEqual(refusal(nextVerifies[index] as Reply), TOKEN_REFUSED, where);
      assert.deepEqual(refusal(nextMints[index] as Reply), USER_KEY_REVOKED, where);
      assert.deepEqual(refusal(nextPartnerVerifies[index] as Reply), PARTNER_KEY_REVOKED, where);
    }
    const check = (loops: string, acknowledgedAt: number, refused: typeof TOKEN_REFUSED) => {
      const mine = replies.filter((reply) => reply.loop.startsWith(loops));
      const before = mine.filter((reply) => reply.sentAt < acknowledgedAt);
      const after = mine.filter((reply) => reply.sentAt >= acknowledgedAt);
      const lastPass = Math.max(...mine.filter((r) => r.status === 200).map((r) => r.answeredAt));
      t.diagnostic(
        `${loops} key, through haproxy: sent before the acknowledgment ${countStatuses(before)} ` +
          `(${countServers(before)}); after it ${countStatuses(after)} (${countServers(after)}); ` +
          `the last 200 answered ${Math.round(acknowledgedAt - lastPass)} ms before it`,
      );
      assert.ok(
        before.some((reply) => reply.status === 200),
        "the load passed before",
      );
      for (const reply of before) assert.ok([200, refused.status].includes(reply.status));
      for (const reply of after) assert.deepEqual(refusal(reply), refused, `${reply.server}`);
      for (const { instance } of cluster.identity) {
        assert.ok(
          after.some((reply) => reply.server === instance.name),
          `${instance.name} asked`,
        );
      }
    };
    check("user", userRevoked.acknowledgedAt, TOKEN_REFUSED);
    check("partner", partnerRevoked.acknowledgedAt, PARTNER_KEY_REVOKED);
  });

  it(`lets exactly ${MINTS_PER_MINUTE} mints of one user key through, spread over the 3 instances`, async (t) => {
    const extra = 5;
    const { key } = cluster.seed.userKeys.sharedLimit;
    await awaitFreshWindow(cluster.redis);
    const replies = await Promise.all(
      Array.from({ length: MINTS_PER_MINUTE + extra }, async (_, i) => {
        const member = cluster.identity[i % 3] as Member;
        return { ...(await mint(member.instance.url, key)), server: member.instance.name };
      }),
    );
    const passed = replies.filter((reply) => reply.status === 201);
    const refused = replies.filter((reply) => reply.status === 429);
    const byInstance = cluster.identity.map(({ instance }) => {
      const its = replies.filter((reply) => reply.server === instance.name);
      return `${instance.name} ${countStatuses(its)}`;
    });
    t.diagnostic(
      `${replies.length} concurrent mints: ${countStatuses(replies)}; ${byInstance.join("; ")}`,
    );
    assert.equal(passed.length, MINTS_PER_MINUTE);
    assert.equal(refused.length, extra);
    // Each success was counted once: the remaining budgets are 9, 8, … 0, each given once.
    const remaining = passed.map((reply) => Number(reply.headers.get("ratelimit-remaining")));
    assert.deepEqual(
      remaining.sort((a, b) => a - b),
      Array.from({ length: MINTS_PER_MINUTE }, (_, i) => i),
    );
    for (const reply of refused) {
      assert.deepEqual(refusal(reply), RATE_LIMITED);
      assert.ok(Number(reply.headers.get("retry-after")) >= 1);
    }
  });

  it("answers 503 from the instance whose PostgreSQL stalls or stops, while the others serve, and recovers", async (t) => {
    const { seed, identityUrl, notesUrl } = cluster;
    const token = await mintToken(identityUrl, seed.userKeys.steady.key);
    const notesToken = await mintToken(identityUrl, seed.userKeys.notes.key);
    const identity = { members: cluster.identity, frontend: identityUrl };
    const notes = { members: cluster.notes, frontend: notesUrl };
    const verifyWith = (url: string) => verify(url, seed.partnerKeys.steady.key, token);
    const identityProbes = (url: string) => [
      ...Array.from({ length: 3 }, () => verifyWith(url)),
      mint(url, seed.userKeys.databaseFaults.key),
    ];
    const listNotes = (url: string) =>
      call(`${url}/api/notes?limit=5`, { headers: { "x-session-token": notesToken } });
    const notesProbes = (url: string) => [
      ...Array.from({ length: 3 }, () => listNotes(url)),
      createNote(url, notesToken, "written while its database was out"),
    ];
    const identityMember = cluster.identity[0] as Member;
    const notesMember = cluster.notes[0] as Member;
    for (const fault of ["stall", "stop"] as const) {
      await proveDatabaseFault(
        t,
        cluster,
        fault,
        identity,
        identityMember,
        verifyWith,
        identityProbes,
      );
      await proveDatabaseFault(t, cluster, fault, notes, notesMember, listNotes, notesProbes);
    }
  });

  it("keeps answering mints, counted in memory as documented, while an instance's Redis stalls or stops", async (t) => {
    const { seed, identityUrl } = cluster;
    const member = cluster.identity[0] as Member;
    const redisProxy = member.redis as NonNullable<Member["redis"]>;
    const token = await mintToken(identityUrl, seed.userKeys.steady.key);
    for (const fault of ["stall", "stop"] as const) {
      const { key } = fault === "stall" ? seed.userKeys.redisStalled : seed.userKeys.redisStopped;
      await awaitFreshWindow(cluster.redis);
      if (fault === "stall") redisProxy.stall();
      else await redisProxy.stop();
      const mints: Reply[] = [];
      for (let i = 0; i < MINTS_PER_MINUTE + 3; i++) {
        mints.push(await mint(member.instance.url, key));
      }
      const verified = await verify(member.instance.url, seed.partnerKeys.steady.key, token);
      if (fault === "stall") redisProxy.resume();
      else await redisProxy.start();
      const backMs = await redisCountingDelay(cluster, member);
      t.diagnostic(
        `${member.instance.name}, Redis ${fault === "stall" ? "stalled" : "stopped"}: ` +
          `${mints.length} mints in a row ${mints.map((m) => m.status).join(" ")}, in ` +
          `${mints.map(took).join(" ")} ms; a verify ${verified.status}; counting in Redis ` +
          `again ${backMs} ms after its return`,
      );
      // README: while Redis cannot answer, requests are still answered and each instance keeps
      // the limits in its own memory; a hung Redis delays one request by its 1 s deadline.
      assert.deepEqual(
        mints.map((reply) => reply.status),
        [...Array(MINTS_PER_MINUTE).fill(201), 429, 429, 429],
      );
      for (const reply of mints) assert.ok(took(reply) <= REDIS_DEADLINE_MS + SLACK_MS);
      assert.equal(verified.status, 200);
      assert.ok(backMs <= 10_000, "counting in Redis again within 10 s of its return");
    }
  });

  it("loses nothing acknowledged and answers no 500 when an identity and a notes instance are killed with SIGKILL under load", async (t) => {
    const { seed, identityUrl, notesUrl, haproxy } = cluster;
    const partnerKey = seed.partnerKeys.steady.key;
    const dashboard = await openDashboard(identityUrl, seed.webSession);
    const doomed = await dashboard.createKey("revoked before the kills");
    assert.ok(doomed.key && doomed.id, "the dashboard showed the new key");
    const doomedToken = await mintToken(identityUrl, doomed.key);
    assert.equal((await dashboard.revokeKey(doomed.id)).status, 303);
    const steadyToken = await mintToken(identityUrl, seed.userKeys.steady.key);
    const notesToken = await mintToken(identityUrl, seed.userKeys.notes.key);

    const created: DashboardKey[] = [];
    const revoked = new Map<string, { key: string; token: string }>();
    /** Creates a key on the dashboard, mints with it, revokes it: each step acknowledged or not. */
    const churnKey = async (round: number) => {
      const made = await dashboard.createKey(`churn-${round}`);
      created.push(made);
      if (!made.key || !made.id) return made.replies;
      const minted = await mint(identityUrl, made.key);
      const token = (minted.body as { sessionToken?: string }).sessionToken;
      if (!token) return [...made.replies, minted];
      const revocation = await dashboard.revokeKey(made.id);
      if (revocation.status === 303) revoked.set(made.name, { key: made.key, token });
      return [...made.replies, minted, revocation];
    };
    const load = startLoad(
      {
        verify: () => verify(identityUrl, partnerKey, steadyToken),
        "verify revoked": () => verify(identityUrl, partnerKey, doomedToken),
        "notes-a": (round) => createNote(notesUrl, notesToken, `a-${round}`),
        "notes-b": (round) => createNote(notesUrl, notesToken, `b-${round}`),
        "notes revoked": (round) => createNote(notesUrl, doomedToken, `never-${round}`),
        keys: churnKey,
      },
      { pauseMs: 10 },
    );
    // A kill lasts from the signal until the process is gone: a connection the dying process
    // accepted in between is cut too.
    const victims = [cluster.identity[1], cluster.notes[0]] as Member[];
    const kills: { signalled: number; gone: number; out: Promise<number> }[] = [];
    for (const { instance } of victims) {
      await sleep(1500);
      const signalled = performance.now();
      await instance.kill();
      const out = haproxy.waitFor(instance.name, "DOWN");
      kills.push({ signalled, gone: performance.now(), out });
    }
    const outAt = await Promise.all(kills.map((kill) => kill.out));
    await sleep(500);
    const restarts = await Promise.all(
      victims.map(async ({ instance }) => {
        await instance.restart();
        const readyAt = performance.now();
        return { readyAt, inAt: await haproxy.waitFor(instance.name, "UP") };
      }),
    );
    await sleep(1500);
    const replies = await load.stop();

    const origin = kills[0]?.signalled ?? 0;
    const failed = replies.filter((reply) => reply.status === 0 || reply.status >= 500);
    const cutOff = (reply: LoadReply) =>
      kills.some(({ signalled, gone }) => reply.sentAt < gone && reply.answeredAt > signalled);
    const loops = new Set(replies.map((reply) => reply.loop)).size;
    const afterRestart = replies.filter((r) => restarts.every(({ inAt }) => r.sentAt > inAt));
    const at = (moment: number | undefined) => Math.round((moment ?? 0) - origin);
    const outMs = kills.map((kill, i) => Math.round((outAt[i] ?? 0) - kill.signalled));
    const inMs = restarts.map(({ readyAt, inAt }) => Math.round(inAt - readyAt));
    t.diagnostic(
      `${replies.length} requests through haproxy: ${countStatuses(replies)}; identity-2 killed ` +
        `at 0 ms (gone at ${at(kills[0]?.gone)} ms), notes-1 at ${at(kills[1]?.signalled)} ms ` +
        `(gone at ${at(kills[1]?.gone)} ms); haproxy took them out ${outMs.join(" and ")} ms ` +
        `after their kill, and back in ${inMs.join(" and ")} ms after they were restarted and ` +
        `ready; from then on ${countServers(afterRestart)}`,
    );
    t.diagnostic(
      `${failed.length} failed, each in flight at a kill: ` +
        `${failed.map((reply) => describeFailure(reply, origin)).join("; ") || "none"}`,
    );
    assert.equal(replies.filter((reply) => reply.status === 500).length, 0, "never a 500");
    for (const reply of failed) assert.ok(cutOff(reply), describeFailure(reply, origin));
    assert.ok(failed.length <= 2 * loops, "at most one request per loop cut off by each kill");
    for (const reply of replies.filter((r) => r.loop.endsWith("revoked"))) {
      const where = `a revoked key's token, never a pass: ${describeFailure(reply, origin)}`;
      assert.ok(reply.status === 401 || failed.includes(reply), where);
    }
    for (const { instance } of victims) {
      const served = afterRestart.some((reply) => reply.server === instance.name);
      assert.ok(served, `${instance.name} serves again`);
    }

    const acknowledgedNotes = replies.filter(
      (r) => r.loop.startsWith("notes-") && r.status === 201,
    );
    const stored = await readAllNotes(notesUrl, notesToken);
    const lost = acknowledgedNotes.filter((reply) => {
      const { note } = reply.body as { note: { id: string; title: string } };
      return stored.get(note.id) !== note.title;
    });
    t.diagnostic(
      `notes: ${acknowledgedNotes.length} acknowledged (201), ${stored.size} stored (a create ` +
        `cut off may have been written), ${lost.length} lost`,
    );
    assert.ok(acknowledgedNotes.length > 0);
    assert.equal(lost.length, 0, "every note answered 201 is kept");

    const listed = await cluster.adminCli(["user-keys", "list", seed.email, "--json"]);
    const rows = JSON.parse(listed.stdout) as { name: string; revokedAt: string | null }[];
    const byName = new Map(rows.map((row) => [row.name, row]));
    const acknowledged = created.filter((made) => made.acknowledged);
    const missing = acknowledged.filter((made) => !byName.has(made.name)).map((made) => made.name);
    const undone = [...revoked.keys()].filter((name) => byName.get(name)?.revokedAt === null);
    for (const [name, { key, token }] of revoked) {
      assert.deepEqual(refusal(await mint(identityUrl, key)), USER_KEY_REVOKED, name);
      assert.deepEqual(refusal(await verify(identityUrl, partnerKey, token)), TOKEN_REFUSED, name);
    }
    t.diagnostic(
      `user keys: ${created.length} created on the dashboard, ${acknowledged.length} ` +
        `acknowledged (${missing.length} missing), ${revoked.size} revocations acknowledged ` +
        `(${undone.length} undone); each revoked key mints 403 and its token verifies 401`,
    );
    assert.ok(revoked.size > 0);
    assert.deepEqual(missing, [], "every acknowledged creation is kept");
    assert.deepEqual(undone, [], "every acknowledged revocation is kept");
  });
});
