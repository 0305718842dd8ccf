import { isoTime } from "@agentpass/http";
import type { UsageBatch, UsageStore } from "../store/usage-store.ts";

/** How often each instance writes the verifications it counted in memory. */
const FLUSH_INTERVAL_MS = 5_000;
/** Time allowed for one such write once it started (a batch is one statement per table). */
const WRITE_ALLOWANCE_MS = 2_000;

/**
 * What became of one verification, as a partner's usage chart counts it. A token bound to a key
 * (RFC 9449) is refused by the reason its proof failed: none sent (`proof_required`), used
 * before (`proof_replayed`), signed by another key than the token's (`proof_wrong_key`), or any
 * other check (`proof_invalid`).
 */
export type VerifyOutcome =
  | "success"
  | "invalid_token"
  | "revoked_partner_key"
  | "proof_required"
  | "proof_invalid"
  | "proof_replayed"
  | "proof_wrong_key";

/** How many verifications of one partner on one day ended each way. */
type Outcomes = Record<VerifyOutcome, number>;
/** A person's successful verifications through one partner: first, last and how many. */
type Use = { first: number; last: number; count: number };

/**
 * What was counted since the last flush, by the ids as the caches hand them out (one string
 * each, hashed once): recording builds no key, and `batchOf` spells the batch out at flush.
 */
interface Tally {
  /** UTC day (`YYYY-MM-DD`) → partner id → counts by outcome */
  daily: Map<string, Map<string, Outcomes>>;
  /** account id → partner id → first, last and count of successful verifications */
  activity: Map<string, Map<string, Use>>;
  /** agent id → partner id → the same, for verifications of an agent's token or JWT */
  agents: Map<string, Map<string, Use>>;
}

const DAY_MS = 86_400_000;

/**
 * Counts verifications without a write on the request path: counts are added up in memory and
 * written in one batch every few seconds (and once more on close): no write on the hot path.
 *
 * Flushes never overlap (a flush asked for while one runs waits for it, then writes what came
 * since), and a batch whose write failed is added back to the next one, so a database outage
 * delays counts but loses none.
 */
export function createUsageRecorder(store: UsageStore, onError: (error: unknown) => void) {
  let tally = newTally();
  let failed: UsageBatch | undefined;
  let running: Promise<void> = Promise.resolve();
  // The UTC day of the last verification, kept so that most verifications name it without
  // formatting a date.
  let day = { start: 0, end: 0, name: "" };

  async function write(): Promise<void> {
    // An agent's use is counted with its person's, so `activity` holds something whenever it does.
    if (tally.daily.size === 0 && tally.activity.size === 0 && !failed) return;
    const pending = failed ? merge(failed, batchOf(tally)) : batchOf(tally);
    tally = newTally();
    failed = undefined;
    try {
      await store.addUsage(pending);
    } catch (error) {
      failed = pending;
      throw error;
    }
  }

  function flush(): Promise<void> {
    const next = running.catch(() => {}).then(write);
    running = next;
    return next;
  }

  function dayOf(at: number): string {
    if (at < day.start || at >= day.end) {
      const start = Math.floor(at / DAY_MS) * DAY_MS;
      day = { start, end: start + DAY_MS, name: isoTime(start).slice(0, 10) };
    }
    return day.name;
  }

  const timer = setInterval(() => flush().catch(onError), FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    /**
     * One verification by `partnerId`; a success names the person (`accountId`) whose email it
     * learned, and the agent (`agentId`) when an agent's token or JWT was verified.
     */
    record(
      partnerId: string,
      outcome: VerifyOutcome,
      at: number,
      accountId?: string,
      agentId?: string,
    ): void {
      const name = dayOf(at);
      const outcomes = entryOf(entryOf(tally.daily, name, newMap<Outcomes>), partnerId, noOutcomes);
      outcomes[outcome]++;
      if (!accountId) return;
      countUse(entryOf(tally.activity, accountId, newMap<Use>), partnerId, at);
      if (agentId) countUse(entryOf(tally.agents, agentId, newMap<Use>), partnerId, at);
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}

function countUse(used: Map<string, Use>, partnerId: string, at: number): void {
  const seen = used.get(partnerId);
  if (seen) {
    seen.count++;
    seen.last = at;
  } else {
    used.set(partnerId, { first: at, last: at, count: 1 });
  }
}

/** The value of `key` in `map`, made and added first if it has none. */
function entryOf<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

function newMap<V>(): Map<string, V> {
  return new Map();
}

function noOutcomes(): Outcomes {
  return {
    success: 0,
    invalid_token: 0,
    revoked_partner_key: 0,
    proof_required: 0,
    proof_invalid: 0,
    proof_replayed: 0,
    proof_wrong_key: 0,
  };
}

function newTally(): Tally {
  return { daily: new Map(), activity: new Map(), agents: new Map() };
}

/** The tally as the store takes it: `partnerId|day|outcome` and `accountId|partnerId` keys. */
function batchOf(tally: Tally): UsageBatch {
  const batch: UsageBatch = { daily: new Map(), activity: new Map(), agents: new Map() };
  for (const [day, partners] of tally.daily) {
    for (const [partnerId, outcomes] of partners) {
      for (const outcome in outcomes) {
        const count = outcomes[outcome as VerifyOutcome];
        if (count > 0) batch.daily.set(`${partnerId}|${day}|${outcome}`, count);
      }
    }
  }
  for (const [accountId, used] of tally.activity) {
    for (const [partnerId, use] of used) batch.activity.set(`${accountId}|${partnerId}`, use);
  }
  for (const [agentId, used] of tally.agents) {
    for (const [partnerId, use] of used) batch.agents.set(`${agentId}|${partnerId}`, use);
  }
  return batch;
}

/** `later` added into `earlier`: counts summed, first and last use widened. */
function merge(earlier: UsageBatch, later: UsageBatch): UsageBatch {
  for (const [key, count] of later.daily) {
    earlier.daily.set(key, (earlier.daily.get(key) ?? 0) + count);
  }
  for (const uses of ["activity", "agents"] as const) {
    for (const [key, use] of later[uses]) {
      const seen = earlier[uses].get(key);
      if (!seen) {
        earlier[uses].set(key, use);
        continue;
      }
      seen.count += use.count;
      seen.first = Math.min(seen.first, use.first);
      seen.last = Math.max(seen.last, use.last);
    }
  }
  return earlier;
}

export type UsageRecorder = ReturnType<typeof createUsageRecorder>;

/**
 * Resolves once the verifications every instance counted before now are written: this
 * process's at once, and those of the instances serving in other processes (which the admin
 * CLI cannot reach) after their next periodic flush, which starts within `FLUSH_INTERVAL_MS`.
 * An export reads after it, so it holds every verification made before it started.
 */
export async function awaitRecordedUsage(usage: { flush(): Promise<void> }): Promise<void> {
  await usage.flush();
  await new Promise((resolve) => setTimeout(resolve, FLUSH_INTERVAL_MS + WRITE_ALLOWANCE_MS));
}
