import type { Needs } from "../context.ts";
import { keyedHash, sameHash, sha256 } from "../infra/crypto.ts";
import type { GrantRecord } from "../store/oauth-store.ts";
import { hashKey, isWellFormedKey } from "./keys.ts";

/**
 * The refresh tokens a grant hands out (`domain/grants.ts`): a user key, or a token of a rotating
 * grant's family, `apr_<grant id>.<family secret>.<generation>.<secret>`; how one is written, read
 * back, and found.
 */

export type PresentedFamilyToken = {
  kind: "family";
  grant: GrantRecord;
  family: string;
  generation: number;
  token: string;
};

export type PresentedToken =
  | {
      kind: "key";
      key: {
        id: string;
        ownerId: string;
        revokedAt: number | null;
        clientId?: string | null;
        audience?: string | null;
        dpopJkt?: string | null;
      };
    }
  | PresentedFamilyToken;

/** What a presented refresh token is: a user key, or a token of a rotating grant's family. */
export async function findRefreshToken(
  ctx: Needs<"store" | "oauth" | "keys">,
  token: string,
): Promise<PresentedToken | undefined> {
  const parsed = parseRefreshToken(token);
  if (parsed) {
    const grant = await ctx.oauth.findGrant(parsed.grantId);
    if (!grant?.familyHash || !sameHash(sha256(parsed.family), grant.familyHash)) return undefined;
    return { kind: "family", grant, family: parsed.family, generation: parsed.generation, token };
  }
  if (!isWellFormedKey("user", token)) return undefined;
  const checked = await ctx.store.beginHotRead();
  const key = await ctx.store.findKeyByHash(checked, "user_keys", hashKey(token));
  if (!key) return undefined;
  if (!key.rotating) return { kind: "key", key };
  // A browser flow's refresh token from before migration 0011: generation 0 of its grant, whose
  // family secret is derived from it (so its successor can be made again).
  const grant = await ctx.oauth.findGrant(key.id);
  if (!grant) return undefined;
  const family = keyedHash(ctx.keys.refreshTokens, `family:${token}`).slice(0, 22);
  if (grant.familyHash !== null && !sameHash(sha256(family), grant.familyHash)) return undefined;
  return { kind: "family", grant, family, generation: 0, token };
}

const REFRESH_TOKEN =
  /^apr_([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})\.(0|[1-9][0-9]{0,8})\.([A-Za-z0-9_-]{43})$/;

export function formatRefreshToken(
  grantId: string,
  family: string,
  generation: number,
  secret: string,
): string {
  const id = Buffer.from(grantId.replaceAll("-", ""), "hex").toString("base64url");
  return `apr_${id}.${family}.${generation}.${secret}`;
}

function parseRefreshToken(
  token: string,
): { grantId: string; family: string; generation: number } | undefined {
  const match = REFRESH_TOKEN.exec(token);
  if (!match) return undefined;
  const [, id = "", family = "", generation = ""] = match;
  const hex = Buffer.from(id, "base64url").toString("hex");
  if (hex.length !== 32) return undefined;
  const grantId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { grantId, family, generation: Number(generation) };
}
