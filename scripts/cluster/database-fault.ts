import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { call, type Reply, refusal, took } from "./client.ts";
import type { Cluster, Member } from "./cluster.ts";
import { SLACK_MS, STALLED_DATABASE_BOUND_MS, UNAVAILABLE } from "./expected.ts";
import { countServers, countStatuses, startLoad } from "./load.ts";
import { sleep } from "./observe.ts";

/** One service of the cluster: its instances and its haproxy frontend. */
interface BalancedMembers {
  members: Member[];
  frontend: string;
}

/**
 * Stalls (nothing forwarded, nothing closed) or stops (connections cut, port closed) the
 * PostgreSQL proxy of `member`, while two loops call `healthy` through haproxy, and proves:
 * - `probes` sent to it directly, and its /readyz, answer 503 `Service unavailable` with
 *   Retry-After within the bound of a hung database: never a pass, never a 500, never a hang;
 * - the other instances answer `healthy` 200, and haproxy takes the instance out: from then on
 *   every request through haproxy is served; before, only it refuses, and only with that 503;
 * - within 10 s of the database's return it serves again, and haproxy takes it back.
 */
export async function proveDatabaseFault(
  t: TestContext,
  cluster: Cluster,
  fault: "stall" | "stop",
  service: BalancedMembers,
  member: Member,
  healthy: (url: string) => Promise<Reply>,
  probes: (url: string) => Promise<Reply>[],
): Promise<void> {
  const { name } = member.instance;
  const siblings = service.members.filter((other) => other !== member);
  assert.equal((await healthy(member.instance.url)).status, 200, `${name} before the fault`);
  const through = () => healthy(service.frontend);
  const load = startLoad({ "through-1": through, "through-2": through }, { pauseMs: 20 });
  await sleep(300);

  const faultAt = performance.now();
  if (fault === "stall") member.database.stall();
  else await member.database.stop();
  const takenOut = cluster.haproxy.waitFor(name, "DOWN");
  const answers = await Promise.all([
    ...probes(member.instance.url),
    call(`${member.instance.url}/readyz`),
  ]);
  const ready = answers.pop() as Reply;
  const others = await Promise.all(siblings.map(({ instance }) => healthy(instance.url)));
  const outAt = await takenOut;
  // The others alone serve for a while, long enough for requests stuck on it to have ended.
  await sleep(Math.max(0, outAt + STALLED_DATABASE_BOUND_MS - performance.now()) + 1000);

  const endedAt = performance.now();
  if (fault === "stall") member.database.resume();
  else await member.database.start();
  let back = await healthy(member.instance.url);
  while (back.status !== 200 && performance.now() - endedAt < 10_000) {
    await sleep(100);
    back = await healthy(member.instance.url);
  }
  const servingAt = performance.now();
  const inAt = await cluster.haproxy.waitFor(name, "UP");
  const replies = await load.stop();

  const out = replies.filter((reply) => reply.sentAt > outAt && reply.answeredAt < endedAt);
  const ms = (from: number, to: number) => Math.round(to - from);
  t.diagnostic(
    `${name}, PostgreSQL ${fault === "stall" ? "stalled" : "stopped"}: ${answers.length} direct ` +
      `requests ${countStatuses(answers)} in ${Math.min(...answers.map(took))}–` +
      `${Math.max(...answers.map(took))} ms; /readyz ${ready.status}; ${siblings.length} other ` +
      `instance(s) ${countStatuses(others)}; haproxy took it out ${ms(faultAt, outAt)} ms after ` +
      `the fault; through haproxy ${countStatuses(replies)} (${countServers(replies)}), ` +
      `${out.length} while it was out, all 200; serving again ${ms(endedAt, servingAt)} ms ` +
      `after the database was back, in haproxy ${ms(servingAt, inAt)} ms later`,
  );
  for (const answer of answers) {
    assert.deepEqual(refusal(answer), UNAVAILABLE, "never a pass, never a 500");
    assert.equal(answer.headers.get("retry-after"), "5");
    const bound = STALLED_DATABASE_BOUND_MS + SLACK_MS;
    assert.ok(took(answer) <= bound, `answered in ${took(answer)} ms, past ${bound} ms`);
  }
  assert.deepEqual(
    { status: ready.status, body: ready.body },
    { status: 503, body: { ok: false, database: false } },
  );
  for (const other of others) assert.equal(other.status, 200, "the other instances serve");
  for (const reply of replies) {
    if (reply.status === 200) continue;
    assert.deepEqual(refusal(reply), UNAVAILABLE, "through haproxy: 200, or its 503");
    assert.equal(reply.server, name, "only the faulty instance refuses");
  }
  assert.ok(out.length > 0, "requests went through haproxy while the instance was out");
  for (const reply of out) {
    const when = `sent ${ms(outAt, reply.sentAt)} ms after haproxy took ${name} out`;
    assert.equal(reply.status, 200, `while it was out, all served: ${reply.server} ${when}`);
  }
  assert.equal(back.status, 200, `${name} serves within 10 s of the database's return`);
}
