import { isoTime } from "@agentpass/http";
import type { UsageBatch, UsageStore } from "./store/usage-store.ts";

const FLUSH_INTERVAL_MS = 5_000;
const DAY_MS = 86_400_000;

/** What became of one verification, as a partner's usage chart counts it. */
export type VerifyOutcome = "success" | "invalid_token" | "revoked_partner_key";

/**
 * Counts verifications without a write on the request path: counts are added up in memory and
 * written in one batch every few seconds (and once more on close), as DESIGN.md section 8 asks.
 */
export function createUsageRecorder(store: UsageStore, onError: (error: unknown) => void) {
  let batch: UsageBatch = { daily: new Map(), activity: new Map() };
  // The UTC day of the last recorded verification, kept so a verify does not format a date.
  let dayStart = 0;
  let dayEnd = 0;
  let day = "";

  function dayOf(at: number): string {
    if (at < dayStart || at >= dayEnd) {
      dayStart = Math.floor(at / DAY_MS) * DAY_MS;
      dayEnd = dayStart + DAY_MS;
      day = isoTime(dayStart).slice(0, 10);
    }
    return day;
  }

  async function flush(): Promise<void> {
    if (batch.daily.size === 0 && batch.activity.size === 0) return;
    const pending = batch;
    batch = { daily: new Map(), activity: new Map() };
    await store.addUsage(pending);
  }

  const timer = setInterval(() => flush().catch(onError), FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    record(partnerId: string, outcome: VerifyOutcome, at: number, accountId?: string): void {
      const key = `${partnerId}|${dayOf(at)}|${outcome}`;
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

export type UsageRecorder = ReturnType<typeof createUsageRecorder>;
