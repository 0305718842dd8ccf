import type { Needs } from "../context.ts";

const DAY_MS = 86_400_000;

/** Verifications with a partner's keys on one UTC day (YYYY-MM-DD), by outcome. */
export interface UsageCount {
  day: string;
  outcome: string;
  count: number;
}

interface PartnerUsage {
  /** The UTC days covered, oldest first, ending today. */
  days: string[];
  counts: UsageCount[];
}

/**
 * A partner's verifications over the last `days` UTC days. This instance's pending counts are
 * written first, so the owner sees what just happened here.
 */
export async function partnerUsage(
  ctx: Needs<"usage" | "usageStore" | "clock">,
  partnerId: string,
  days: number,
): Promise<PartnerUsage> {
  const covered = lastDays(ctx.clock(), days);
  await ctx.usage.flush();
  const rows = await ctx.usageStore.usageOf(partnerId, covered[0] ?? "");
  const counts = rows.map((row) => ({
    day: row.day,
    outcome: row.outcome,
    count: Number(row.count),
  }));
  return { days: covered, counts };
}

/** The last `days` UTC days up to `now`, oldest first, as YYYY-MM-DD. */
function lastDays(now: number, days: number): string[] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return Array.from({ length: days }, (_, i) =>
    new Date(today - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10),
  );
}
