import { randomBytes } from "node:crypto";
import { call, type Reply } from "./client.ts";

/** A key made on the dashboard: whether its creation was acknowledged, and what came back. */
export interface DashboardKey {
  name: string;
  /** The POST answered 303: the key exists, whatever happens after. */
  acknowledged: boolean;
  /** The key and its id, as the page shown once after the redirect gave them. */
  key?: string;
  id?: string;
  replies: Reply[];
}

/**
 * A signed-in browser on the dashboard (through `identityUrl`, haproxy): creates and revokes
 * user keys with the forms a person uses. The session is the seeded one; the browser id is its
 * own, and the CSRF token the one the pages give it.
 */
export async function openDashboard(identityUrl: string, webSession: string) {
  const browser = randomBytes(32).toString("base64url");
  const cookie = `agentpass_browser=${browser}; agentpass_session=${webSession}`;
  const page = await call(`${identityUrl}/keys`, { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(String(page.body))?.[1];
  if (page.status !== 200 || !csrf) throw new Error(`not signed in: /keys ${page.status}`);
  const post = (path: string, fields: Record<string, string>) =>
    call(`${identityUrl}${path}`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf, ...fields }),
    });

  return {
    /** POST /keys, then the page it redirects to, which shows the new key once. */
    async createKey(name: string): Promise<DashboardKey> {
      const created = await post("/keys", { name });
      const made: DashboardKey = { name, acknowledged: created.status === 303, replies: [created] };
      if (!made.acknowledged) return made;
      const flash = created.headers
        .getSetCookie()
        .map((line) => line.split(";")[0])
        .join("; ");
      const shown = await call(`${identityUrl}/keys`, {
        headers: { cookie: flash ? `${cookie}; ${flash}` : cookie },
      });
      made.replies.push(shown);
      const html = String(shown.body);
      made.key = /id="new-key" class="secret">(apu_[^<]+)</.exec(html)?.[1];
      made.id = new RegExp(`<tr data-key="([^"]+)"><td>${name}</td>`).exec(html)?.[1];
      return made;
    },
    /** POST /keys/:id/revoke with the confirmation: acknowledged by a 303. */
    revokeKey(id: string): Promise<Reply> {
      return post(`/keys/${id}/revoke`, { confirm: "yes" });
    },
  };
}
