import type { UsageCount } from "../../domain/partner-usage.ts";
import type { VerifyOutcome } from "../../domain/usage-recorder.ts";
import { html } from "./page.ts";

const OUTCOME_LABELS: Record<VerifyOutcome, string> = {
  success: "Verified",
  invalid_token: "Invalid or expired token",
  revoked_partner_key: "Revoked partner key",
  proof_required: "Key-bound token without its DPoP proof",
  proof_invalid: "Invalid DPoP proof",
  proof_replayed: "Replayed DPoP proof",
  proof_wrong_key: "DPoP proof signed by another key",
};

/**
 * Verifications per day as an inline SVG of stacked bars (successes below, failures above),
 * with the same figures as a table for screen readers and for copying.
 */
export function usageChart(rows: UsageCount[], days: string[]) {
  if (rows.length === 0) {
    return html`<p class="empty" id="usage-empty">No verifications in the last ${days.length} days yet. Once your API calls <code>POST /api/verify</code> with one of this partner's keys, they show here by day.</p>`;
  }
  const perDay = new Map(days.map((day) => [day, { ok: 0, failed: 0 }]));
  const totals = new Map<string, number>();
  for (const row of rows) {
    const count = Number(row.count);
    totals.set(row.outcome, (totals.get(row.outcome) ?? 0) + count);
    const day = perDay.get(row.day);
    if (!day) continue;
    if (row.outcome === "success") day.ok += count;
    else day.failed += count;
  }
  const width = 600;
  const height = 160;
  const barWidth = width / days.length;
  const max = Math.max(1, ...[...perDay.values()].map((d) => d.ok + d.failed));
  const scale = (n: number) => (n / max) * (height - 20);
  const bars = days.map((day, i) => {
    const { ok, failed } = perDay.get(day) ?? { ok: 0, failed: 0 };
    const x = (i * barWidth + 1).toFixed(1);
    const w = (barWidth - 2).toFixed(1);
    const okHeight = scale(ok);
    const failedHeight = scale(failed);
    return html`<g><title>${day}: ${ok} verified, ${failed} failed</title>
<rect x="${x}" y="${(height - okHeight).toFixed(1)}" width="${w}" height="${okHeight.toFixed(1)}" fill="#11734b"></rect>
<rect x="${x}" y="${(height - okHeight - failedHeight).toFixed(1)}" width="${w}" height="${failedHeight.toFixed(1)}" fill="#b42318"></rect></g>`;
  });
  const total = [...totals.values()].reduce((a, b) => a + b, 0);
  return html`<svg class="chart" id="usage-chart" role="img" aria-labelledby="usage-chart-title" viewBox="0 0 ${width} ${height + 18}" width="${width}" height="${height + 18}">
<title id="usage-chart-title">Verifications per day, last ${days.length} days: ${total} in all, peak ${max === 1 && total === 0 ? 0 : max} a day</title>
<line x1="0" y1="${height}" x2="${width}" y2="${height}" stroke="#dcdce3"></line>
${bars}
<text x="0" y="${height + 14}" font-size="11" fill="#5b5b66">${days[0]}</text>
<text x="${width}" y="${height + 14}" font-size="11" fill="#5b5b66" text-anchor="end">${days.at(-1)}</text>
</svg>
<p class="muted"><span class="ok">■</span> verified <span class="error">■</span> failed</p>
<table id="usage-totals"><thead><tr><th scope="col">Outcome (last ${days.length} days)</th><th scope="col">Count</th></tr></thead>
<tbody>${Object.entries(OUTCOME_LABELS).map(
    ([outcome, label]) =>
      html`<tr data-outcome="${outcome}"><td>${label}</td><td>${totals.get(outcome) ?? 0}</td></tr>`,
  )}</tbody></table>`;
}
