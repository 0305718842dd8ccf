import { isoTime } from "@agentpass/http";
import type { UsageBatch, UsageStore } from "./store/usage-store.ts";

const FLUSH_INTERVAL_MS = 5_000;
const DAY_MS = 86_400_000;

/** What became of one verification, as a partner's usage chart counts it. */
export type VerifyOutcome = "success" | "invalid_token" | "revoked_partner_key";

/**
 * Counts verifications without a write on the request path: counts are added up in memory and
 * written in one batch every few seconds (and once more on close): no write on the hot path.
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

  // The batch's keys, each built once and reused while the batch lasts: a verify then builds
  // no string, and looks its counters up by strings whose hashes V8 already knows.
  let dailyKeys = new Map<string, { day: string; of: Record<VerifyOutcome, string> }>();
  let pairKeys = new Map<string, Map<string, string>>();

  function dailyKey(partnerId: string, day: string, outcome: VerifyOutcome): string {
    let keys = dailyKeys.get(partnerId);
    if (keys?.day !== day) {
      const prefix = `${partnerId}|${day}|`;
      keys = {
        day,
        of: {
          success: `${prefix}success`,
          invalid_token: `${prefix}invalid_token`,
          revoked_partner_key: `${prefix}revoked_partner_key`,
        },
      };
      dailyKeys.set(partnerId, keys);
    }
    return keys.of[outcome];
  }

  function pairKey(accountId: string, partnerId: string): string {
    let byPartner = pairKeys.get(accountId);
    if (!byPartner) {
      byPartner = new Map();
      pairKeys.set(accountId, byPartner);
    }
    let key = byPartner.get(partnerId);
    if (key === undefined) {
      key = `${accountId}|${partnerId}`;
      byPartner.set(partnerId, key);
    }
    return key;
  }

  async function flush(): Promise<void> {
    if (batch.daily.size === 0 && batch.activity.size === 0) return;
    const pending = batch;
    batch = { daily: new Map(), activity: new Map() };
    dailyKeys = new Map();
    pairKeys = new Map();
    await store.addUsage(pending);
  }

  const timer = setInterval(() => flush().catch(onError), FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    record(partnerId: string, outcome: VerifyOutcome, at: number, accountId?: string): void {
      const key = dailyKey(partnerId, dayOf(at), outcome);
      batch.daily.set(key, (batch.daily.get(key) ?? 0) + 1);
      if (!accountId) return;
      const pair = pairKey(accountId, partnerId);
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
