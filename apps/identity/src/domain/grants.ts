import { randomUUID } from "node:crypto";
import type { Needs } from "../context.ts";
import { keyedHash, randomSecret, sameHash, sha256 } from "../infra/crypto.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import type { ConnectedApp } from "../store/oauth-store.ts";
import { isId } from "./ids.ts";
import { displayPrefixOf, generateKey, hashKey } from "./keys.ts";
import {
  findRefreshToken,
  formatRefreshToken,
  type PresentedFamilyToken,
} from "./refresh-tokens.ts";
import { sealFor } from "./session-tokens.ts";

/**
 * Grants: what a person gave a client — a consent in the browser (authorization code) or an
 * approved device login. A grant is one user key row (the anchor every session token of the grant
 * names, so revoking that one row ends them all on the next request, on every instance) and one
 * `grants` row (what the person is shown, and the refresh-token family's state).
 *
 * A device login's refresh token is the user key itself (`apu_…`, the CLI keeps it and it does
 * not rotate: the spec's model). A browser flow's refresh token rotates inside its grant as one
 * family (RFC 9700 section 4.14):
 *
 *   apr_<grant id>.<family secret>.<generation>.<secret>
 *
 * Every token of the family carries the family secret, whose hash the grant keeps, so any token
 * ever handed out names its grant and proves it belongs there, without a row per token. The
 * generation-n+1 secret is an HMAC of the generation-n token under a key derived from the
 * service's secret: a token's successor can be made again (parallel refreshes get the same one)
 * by this service only, and the database holds nothing but hashes. Rotation rewrites the grant
 * row in place, so 10,000 refreshes leave one row.
 */

/**
 * For how long after a rotation the token just replaced still gives the same successor, and the
 * successor is not rotated again: clients that refresh once per concurrent 401 (the MCP
 * TypeScript SDK) present the old and the new token several times at once. Okta's default.
 */
const REFRESH_GRACE_MS = 30_000;

interface GrantClient {
  id: string;
  name: string;
  /** Whether the name is vouched for (`isVouchedClientId`), not only the client's own word. */
  verified: boolean;
}

/** A grant as the audit log names it: ids and names, never a token. */
export interface GrantSummary {
  id: string;
  accountId: string;
  clientId: string;
  clientName: string;
}

interface NewGrantRequest {
  accountId: string;
  client: GrantClient;
  audience: string | null;
  createdFrom: string | null;
  /** A browser flow's rotating refresh token; else the user key the CLI keeps. */
  rotating: boolean;
  /** The DPoP key the refresh token is bound to (every client here is public); null: none. */
  dpopJkt?: string | null;
}

/** Makes a grant; its first refresh token is handed out here once and stored only hashed. */
export async function createGrant(
  ctx: Needs<"oauth" | "clock">,
  request: NewGrantRequest,
): Promise<{ id: string; refreshToken: string }> {
  const id = randomUUID();
  const family = randomSecret(16);
  const refreshToken = request.rotating
    ? formatRefreshToken(id, family, 0, randomSecret())
    : generateKey("user");
  await ctx.oauth.insertGrant({
    id,
    accountId: request.accountId,
    clientId: request.client.id,
    clientName: request.client.name,
    clientVerified: request.client.verified,
    audience: request.audience,
    rotating: request.rotating,
    createdAt: ctx.clock(),
    createdFrom: request.createdFrom,
    keyName: request.client.name.slice(0, 100),
    displayPrefix: displayPrefixOf(refreshToken),
    // A rotating grant's key row is found by id, never by a key: its hash is of nothing handed out.
    secretHash: hashKey(request.rotating ? randomSecret() : refreshToken),
    familyHash: request.rotating ? sha256(family) : null,
    refreshHash: request.rotating ? sha256(refreshToken) : null,
    dpopJkt: request.dpopJkt ?? null,
  });
  return { id, refreshToken };
}

type RefreshError =
  | "invalid_grant"
  | "invalid_target"
  | "rate_limited"
  | "reused"
  | "revoked"
  | "wrong_client";

type RefreshResult =
  | {
      ok: true;
      accessToken: string;
      expiresIn: number;
      /** Present when the grant's refresh token rotates: the one to use next time. */
      refreshToken?: string;
    }
  | { ok: false; error: "rate_limited"; limit: RateLimitResult }
  | {
      ok: false;
      error: Exclude<RefreshError, "rate_limited">;
      description: string;
      /** "reused": the grant this refusal ended, for the audit log; absent if already ended. */
      revokedGrant?: GrantSummary;
    };

interface RefreshLimits {
  /** Refreshes per grant (and mints per key, for a user key presented as a refresh token). */
  perGrant: RateLimiter;
  /** Refreshes per account, all its grants together. */
  perAccount: RateLimiter;
}

type RefreshContext = Needs<
  "store" | "oauth" | "clock" | "sealingKeys" | "keyUsage" | "sessionTokenTtlMs" | "keys"
>;

/**
 * RFC 6749 section 6. A user key in (a device login's, or one made by hand): a session token out,
 * as minting. A rotating refresh token in: a session token and the family's next refresh token
 * out. Within `REFRESH_GRACE_MS` of a rotation, the token just replaced and its successor both
 * get that successor back (no second rotation); any other replaced token, or the one just
 * replaced after the window, revokes the grant (a replay), in one write.
 * `audience` is the partner a `resource` named, already resolved; null: none was asked.
 */
export async function refreshGrant(
  ctx: RefreshContext,
  fields: {
    refreshToken: string;
    clientId: string | undefined;
    audience: string | null;
    /** The thumbprint of the key of the request's DPoP proof; null: none was sent. */
    jkt: string | null;
  },
  limits: RefreshLimits,
): Promise<RefreshResult> {
  const presented = await findRefreshToken(ctx, fields.refreshToken);
  if (!presented) return refused("invalid_grant", "Unknown refresh token");
  const now = ctx.clock();
  const holder = presented.kind === "key" ? presented.key : presented.grant;
  if (holder.revokedAt !== null) return refused("revoked", "The refresh token has been revoked");
  if (holder.clientId && fields.clientId !== holder.clientId) {
    return refused("wrong_client", "The refresh token was issued to another client");
  }
  // RFC 9449 section 5: a bound refresh token is good only with a proof by its key. Judged
  // before anything is counted or rotated, so a copy without the key changes nothing.
  const boundTo =
    presented.kind === "key" ? (presented.key.dpopJkt ?? null) : presented.grant.dpopJkt;
  if (boundTo !== null && fields.jkt !== boundTo) {
    return refused("invalid_grant", "The refresh token is bound to another DPoP key");
  }
  const bound = holder.audience ?? null;
  if (fields.audience !== null && bound !== null && fields.audience !== bound) {
    return refused("invalid_target", "Unknown or unauthorized resource");
  }
  const audience = fields.audience ?? bound;
  const perGrant = await limits.perGrant.take(holder.id);
  if (!perGrant.ok) return { ok: false, error: "rate_limited", limit: perGrant };
  const expiresIn = Math.floor(ctx.sessionTokenTtlMs / 1000);
  if (presented.kind === "key") {
    ctx.keyUsage.record("user_keys", holder.id, now);
    const sealed = sealFor(ctx, presented.key, audience, fields.jkt);
    return { ok: true, accessToken: sealed.sessionToken, expiresIn };
  }
  const { grant } = presented;
  const perAccount = await limits.perAccount.take(grant.accountId);
  if (!perAccount.ok) return { ok: false, error: "rate_limited", limit: perAccount };
  const next = await rotate(ctx, presented, now);
  if (next === "revoked") return refused("revoked", "The refresh token has been revoked");
  if (next === null) {
    // A replaced token presented again: the family was stolen or replayed, and ends here.
    const ended = await ctx.store.revokeKey("user_keys", grant.id, now);
    const description = "The refresh token has been used already: the grant is revoked";
    if (!ended) return refused("reused", description);
    // A grant's key is named after its client when it is made (`createGrant`).
    const key = await ctx.store.findKeyById("user_keys", grant.id);
    const { accountId, clientId } = grant;
    const revokedGrant = { id: grant.id, accountId, clientId, clientName: key?.name ?? clientId };
    return { ok: false, error: "reused", description, revokedGrant };
  }
  ctx.keyUsage.record("user_keys", grant.id, now);
  const sealed = sealFor(ctx, { id: grant.id, ownerId: grant.accountId }, audience, fields.jkt);
  return { ok: true, accessToken: sealed.sessionToken, expiresIn, refreshToken: next };
}

/**
 * The family's next token for `presented`, or null when `presented` is a replaced token outside
 * its grace (or an older one), or "revoked" when the grant was revoked meanwhile.
 */
async function rotate(
  ctx: Needs<"oauth" | "keys">,
  presented: PresentedFamilyToken,
  now: number,
): Promise<string | "revoked" | null> {
  let { grant } = presented;
  const { family, generation, token } = presented;
  const successor = formatRefreshToken(
    grant.id,
    family,
    generation + 1,
    keyedHash(ctx.keys.refreshTokens, token),
  );
  // A grant from before migration 0011 keeps no token hash: its key (found by hash) is generation 0.
  const isCurrent =
    generation === grant.generation &&
    (grant.refreshHash === null ? generation === 0 : sameHash(sha256(token), grant.refreshHash));
  if (isCurrent && grant.rotatedAt !== null && now - grant.rotatedAt <= REFRESH_GRACE_MS) {
    // Rotated moments ago: callers racing at expiry read the new token and the old one in any
    // order (the MCP TypeScript SDK does), so the new one is not rotated again inside the window:
    // the old one and the new one both lead to it, and every caller ends with the same pair.
    return token;
  }
  if (isCurrent) {
    const moved = await ctx.oauth.advanceGrant(grant.id, generation, {
      refreshHash: sha256(successor),
      familyHash: sha256(family),
      at: now,
    });
    if (moved) return successor;
    // Another refresh with the same token moved it first: this one is a parallel caller.
    const reread = await ctx.oauth.findGrant(grant.id);
    if (!reread || reread.revokedAt !== null) return "revoked";
    grant = reread;
  }
  const inGrace =
    generation === grant.generation - 1 &&
    grant.rotatedAt !== null &&
    now - grant.rotatedAt <= REFRESH_GRACE_MS &&
    grant.refreshHash !== null &&
    sameHash(sha256(successor), grant.refreshHash);
  return inGrace ? successor : null;
}

/** What a revocation ended, named for the audit log: ids and names, never a token. */
export type RevokedCredential =
  | { kind: "grant"; grant: GrantSummary }
  /** A user key made by hand, which no client was given, presented as a refresh token. */
  | { kind: "user_key"; id: string; accountId: string; name: string };

type TokenRevocation =
  | { ok: true; revoked: RevokedCredential }
  /**
   * "unknown": no working grant or key has this token (RFC 7009 answers 200 all the same);
   * "access_token": a session token, which expires by itself within minutes.
   */
  | { ok: false; code: "unknown" | "access_token" };

/**
 * RFC 7009: revokes the grant of a refresh token of any generation, or the user key presented,
 * in one write.
 */
export async function revokeByRefreshToken(
  ctx: Needs<"store" | "oauth" | "clock" | "keys">,
  token: string,
): Promise<TokenRevocation> {
  if (token.startsWith("aps_")) return { ok: false, code: "access_token" };
  const presented = await findRefreshToken(ctx, token);
  if (!presented) return { ok: false, code: "unknown" };
  const revoked = await revokeCredential(
    ctx,
    presented.kind === "key" ? presented.key.id : presented.grant.id,
  );
  return revoked ? { ok: true, revoked } : { ok: false, code: "unknown" };
}

/**
 * Revokes the user key `keyId` (a grant's anchor, or a key made by hand) in one write, and says
 * what it was; null when it was revoked already, so a revocation is reported once.
 */
export async function revokeCredential(
  ctx: Needs<"store" | "oauth" | "clock">,
  keyId: string,
): Promise<RevokedCredential | null> {
  if (!(await ctx.store.revokeKey("user_keys", keyId, ctx.clock()))) return null;
  const key = await ctx.store.findKeyById("user_keys", keyId);
  const grant = await ctx.oauth.findGrant(keyId);
  if (!key) return null;
  if (!grant) return { kind: "user_key", id: keyId, accountId: key.ownerId, name: key.name };
  const { accountId, clientId } = grant;
  // A grant's key is named after its client when it is made (`createGrant`).
  return { kind: "grant", grant: { id: keyId, accountId, clientId, clientName: key.name } };
}

/** The grants of an account that still work, one row each, with their latest use. */
export async function listConnectedApps(
  ctx: Needs<"oauth" | "keyUsage">,
  accountId: string,
): Promise<ConnectedApp[]> {
  await ctx.keyUsage.flush();
  return ctx.oauth.listGrants(accountId);
}

/**
 * Revokes a grant of `accountId`: every token of it stops on the next request anywhere, however
 * many times it was refreshed. False when the account has no working grant with that id.
 */
export async function revokeConnectedApp(
  ctx: Needs<"store" | "oauth" | "clock">,
  accountId: string,
  grantId: string,
): Promise<boolean> {
  if (!isId(grantId)) return false;
  const grant = await ctx.oauth.findGrant(grantId);
  if (grant?.accountId !== accountId) return false;
  return ctx.store.revokeKey("user_keys", grant.id, ctx.clock());
}

/** Revokes every grant of an account ("sign out everywhere", when the person asks for it). */
export function revokeAllConnectedApps(
  ctx: Needs<"oauth" | "clock">,
  accountId: string,
): Promise<number> {
  return ctx.oauth.revokeGrantsOf(accountId, ctx.clock());
}

function refused(error: Exclude<RefreshError, "rate_limited">, description: string): RefreshResult {
  return { ok: false, error, description };
}
