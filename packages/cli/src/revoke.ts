import { CLIENT_ID, postToService } from "./service-request.ts";

export type RevokeResult = { ok: true } | { ok: false; reason: "unreachable" | `HTTP ${number}` };

/**
 * Revokes a user key on the server (RFC 7009, `POST /oauth/revoke`): the key and every session
 * token made from it stop working on the next request. An unknown key is revoked too, as far
 * as anyone can tell (the RFC answers 200 for it).
 */
export async function revokeUserKey(url: string, userKey: string): Promise<RevokeResult> {
  const answer = await postToService(url, "/oauth/revoke", {
    form: { token: userKey, token_type_hint: "refresh_token", client_id: CLIENT_ID },
  });
  if (!answer) return { ok: false, reason: "unreachable" };
  return answer.status === 200 ? { ok: true } : { ok: false, reason: `HTTP ${answer.status}` };
}
