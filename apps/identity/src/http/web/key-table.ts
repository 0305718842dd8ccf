import type { KeyRecord } from "../../store/store.ts";
import { csrfField, formatTime, html } from "./page.ts";

/** The table of a person's or a partner's keys, with a revoke button on each active one. */
export function keyTable(keys: KeyRecord[], revokeBase: string, csrf: string) {
  if (keys.length === 0) return html`<p class="empty">No keys yet.</p>`;
  return html`<table>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col" class="optional">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${keys.map(
    (key) => html`<tr>
<td>${key.name}</td><td><code>${key.displayPrefix}…</code></td>
<td class="optional">${formatTime(key.createdAt)}</td><td>${formatTime(key.lastUsedAt)}</td>
<td>${
      key.revokedAt === null
        ? html`<form method="post" action="${revokeBase}/${key.id}/revoke" class="inline">${csrfField(csrf)}<button class="danger" type="submit" aria-label="Revoke ${key.name}">Revoke</button></form>`
        : html`<span class="muted">revoked ${formatTime(key.revokedAt)}</span>`
    }</td></tr>`,
  )}</tbody></table>`;
}

/** The secret of a key just made: shown this once, with a copy button. */
export function shownOnce(key: string, afterwards: ReturnType<typeof html>) {
  return html`<div class="card" role="status">
<p><strong>Copy this key now.</strong> It is shown only once; AgentPass keeps only its hash.</p>
<p id="new-key" class="secret">${key}</p>
<p><button type="button" class="secondary" data-copy="new-key" hidden>Copy</button></p>
${afterwards}</div>`;
}
