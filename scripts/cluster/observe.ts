import type { Redis } from "ioredis";
import { generateKey } from "../../apps/identity/src/domain/keys.ts";
import { mint } from "./client.ts";
import type { Cluster, Member } from "./cluster.ts";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits for the next minute of Redis's clock when the current one ends within `marginMs`: the
 * rate-limit windows are minutes of that clock, and a count that straddles two windows proves
 * nothing about one.
 */
export async function awaitFreshWindow(redis: Redis, marginMs = 8000): Promise<void> {
  const [seconds, micros] = await redis.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const left = 60_000 - (now % 60_000);
  if (left < marginMs) await sleep(left + 100);
}

/** The hits of every per-address bad-key counter in Redis, summed. */
async function countedBadKeys(redis: Redis): Promise<number> {
  let total = 0;
  for await (const keys of redis.scanStream({ match: "agentpass:ratelimit:badKeysPerIp:*" })) {
    for (const key of keys as string[]) total += Number((await redis.hget(key, "count")) ?? 0);
  }
  return total;
}

/**
 * Milliseconds until a hit on `member` is counted in Redis again: a mint with an unknown key
 * (answered 401, counted against the client's address) every 200 ms, until Redis's counter of
 * such requests moves. Nothing else runs meanwhile, so only these mints move it.
 */
export async function redisCountingDelay(cluster: Cluster, member: Member): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 15_000) {
    const before = await countedBadKeys(cluster.redis);
    await mint(member.instance.url, generateKey("user"));
    if ((await countedBadKeys(cluster.redis)) > before) {
      return Math.round(performance.now() - started);
    }
    await sleep(200);
  }
  return Number.POSITIVE_INFINITY;
}

/**
 * Prints what the instances logged at `error` or `fatal` (pino levels 50 and 60), so that a
 * failure that did not show in an answer still shows in the run's output.
 */
export function reportErrorLogs(cluster: Cluster): void {
  for (const { instance } of [...cluster.identity, ...cluster.notes]) {
    const lines = instance
      .output()
      .split("\n")
      .filter((line) => /"level":(50|60)\b/.test(line) || /^\s*(Error|TypeError)\b/.test(line));
    console.log(`# ${instance.name}: ${lines.length} error lines logged`);
    for (const line of lines.slice(0, 5)) console.log(`#   ${line.slice(0, 400)}`);
  }
}
