import { isoTime } from "@agentpass/http";
import type { UsageBatch, UsageStore } from "../store/usage-store.ts";

const FLUSH_INTERVAL_MS = 5_000;

/** What became of one verification, as a partner's usage chart counts it. */
export type VerifyOutcome = "success" | "invalid_token" | "revoked_partner_key";

/**
 * Counts verifications without a write on the request path: counts are added up in memory and
 * written in one batch every few seconds (and once more on close): no write on the hot path.
 *
 * Flushes never overlap (a flush asked for while one runs waits for it, then writes what came
 * since), and a batch whose write failed is added back to the next one, so a database outage
 * delays counts but loses none.
 */
export function createUsageRecorder(store: UsageStore, onError: (error: unknown) => void) {
  let batch: UsageBatch = { daily: new Map(), activity: new Map() };
  let running: Promise<void> = Promise.resolve();

  async function write(): Promise<void> {
    if (batch.daily.size === 0 && batch.activity.size === 0) return;
    const pending = batch;
    batch = { daily: new Map(), activity: new Map() };
    try {
      await store.addUsage(pending);
    } catch (error) {
      batch = merge(pending, batch);
      throw error;
    }
  }

  function flush(): Promise<void> {
    const next = running.catch(() => {}).then(write);
    running = next;
    return next;
  }

  const timer = setInterval(() => flush().catch(onError), FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    record(partnerId: string, outcome: VerifyOutcome, at: number, accountId?: string): void {
      const key = `${partnerId}|${isoTime(at).slice(0, 10)}|${outcome}`;
      batch.daily.set(key, (batch.daily.get(key) ?? 0) + 1);
      if (!accountId) return;
      const pair = `${accountId}|${partnerId}`;
      const seen = batch.activity.get(pair);
      if (seen) {
        seen.count++;
        seen.last = at;
      } else {
        batch.activity.set(pair, { first: at, last: at, count: 1 });
      }
    },
    flush,
    async close(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}

/** `later` added into `earlier`: counts summed, first and last use widened. */
function merge(earlier: UsageBatch, later: UsageBatch): UsageBatch {
  for (const [key, count] of later.daily) {
    earlier.daily.set(key, (earlier.daily.get(key) ?? 0) + count);
  }
  for (const [key, use] of later.activity) {
    const seen = earlier.activity.get(key);
    if (!seen) {
      earlier.activity.set(key, use);
      continue;
    }
    seen.count += use.count;
    seen.first = Math.min(seen.first, use.first);
    seen.last = Math.max(seen.last, use.last);
  }
  return earlier;
}

export type UsageRecorder = ReturnType<typeof createUsageRecorder>;
