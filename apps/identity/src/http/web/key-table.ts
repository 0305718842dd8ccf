import type { KeyRecord } from "../../store/store.ts";
import { formatTime, html } from "./page.ts";

/**
 * A person's or a partner's keys: the live ones with a rename and a revoke link each, and below
 * them the revoked ones, folded away. `keysPath` is where the keys' pages are (`/keys`,
 * `/partners/…/keys`).
 */
export function keyTable(keys: KeyRecord[], keysPath: string) {
  const live = keys.filter((key) => key.revokedAt === null);
  const revoked = keys.filter((key) => key.revokedAt !== null);
  const header = (last: ReturnType<typeof html> | string) =>
    html`<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col" class="optional">Created</th><th scope="col">Last used</th><th scope="col">${last}</th></tr></thead>`;
  const cells = (key: KeyRecord) =>
    html`<td>${key.name}</td><td><code>${key.displayPrefix}…</code></td>
<td class="optional">${formatTime(key.createdAt)}</td><td>${formatTime(key.lastUsedAt)}</td>`;
  const liveKeys =
    live.length === 0
      ? html`<p class="empty">${revoked.length === 0 ? "No keys yet." : "No live keys."}</p>`
      : html`<table id="live-keys">${header(html`<span class="visually-hidden">Actions</span>`)}
<tbody>${live.map(
          (key) => html`<tr data-key="${key.id}">${cells(key)}
<td class="actions"><a class="button secondary" href="${keysPath}/${key.id}/rename" aria-label="Rename ${key.name}">Rename</a> <a class="button danger" href="${keysPath}/${key.id}/revoke" aria-label="Revoke ${key.name}">Revoke</a></td></tr>`,
        )}</tbody></table>`;
  if (revoked.length === 0) return liveKeys;
  return html`${liveKeys}
<details id="revoked-keys"><summary>Revoked keys (${revoked.length})</summary>
<table>${header("Revoked")}
<tbody>${revoked.map(
    (key) => html`<tr data-key="${key.id}">${cells(key)}<td>${formatTime(key.revokedAt)}</td></tr>`,
  )}</tbody></table></details>`;
}

/** The secret of a key just made: shown this once, with a copy button. */
export function shownOnce(key: string, afterwards: ReturnType<typeof html>) {
  return html`<div class="card" role="status">
<p><strong>Copy this key now.</strong> It is shown only once; AgentPass keeps only its hash.</p>
<p id="new-key" class="secret">${key}</p>
<p><button type="button" class="secondary" data-copy="new-key" hidden>Copy</button></p>
${afterwards}</div>`;
}
