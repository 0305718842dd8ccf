import type { IdentityContext, Needs } from "../context.ts";
import type { RateLimiter, RateLimitResult } from "../infra/rate-limit.ts";
import { CLOCK_SKEW_MS, type SessionClaims, sealSessionToken } from "../infra/sealed-tokens.ts";
import type { TokenOwner } from "../store/store.ts";
import { isAgentJwt } from "./agent-jwt.ts";
import { audienceOfResources, findActiveAgent, judgeAgentJwt } from "./agents.ts";
import {
  type HolderProof,
  type HolderRefusal,
  type PresentedProof,
  refusalOfProof,
} from "./holder-proofs.ts";
import { hashKey, isWellFormedKey } from "./keys.ts";

type MintResult =
  | {
      ok: true;
      sessionToken: string;
      expiresAt: number;
      /** The thumbprint of the key the token is bound to; null: a bearer token. */
      jkt: string | null;
      /** The agent that minted it (its JWT sent as `agent`); null: none. */
      agent: { id: string; name: string } | null;
      limit: RateLimitResult;
    }
  | { ok: false; code: "RATE_LIMITED"; limit: RateLimitResult }
  | { ok: false; code: "INVALID_USER_KEY" | "REVOKED_USER_KEY" | "INVALID_AUDIENCE" }
  | { ok: false; code: "INVALID_DPOP_PROOF" | "INVALID_AGENT_JWT"; description: string };

/** An agent minting as itself: its JWT (`aud` the issuer) and the issuer it must name. */
interface MintingAgent {
  jwt: string;
  issuer: string;
}

/**
 * The partner a mint asks its token to be bound to (`partnerId`, or null for any partner), or
 * `malformed` when the request named something that is not a partner id: refused, but only once
 * the key is judged, so a caller without a working key learns nothing about partners.
 */
type RequestedAudience = { partnerId: string | null } | "malformed";

/**
 * Trades a user key for a session token, optionally bound to one partner (`audience`), and to
 * the key of the request's DPoP `proof` when it carries one. With an `agent`'s JWT, the token
 * names that agent (of the key's own person), and every verification of it checks the agent. Each mint by a working key counts
 * against `perUserKey`. The proof is judged last, after the key, so a caller without a working
 * key learns nothing from it, and its `jti` is spent only by a mint that passed everything else.
 * Writes nothing else: the token is sealed, and the key's last use is recorded in a later batch.
 */
export async function mintSessionToken(
  ctx: IdentityContext,
  userKey: string,
  audience: RequestedAudience,
  perUserKey: RateLimiter,
  proof: PresentedProof | null = null,
  agent: MintingAgent | null = null,
): Promise<MintResult> {
  if (!isWellFormedKey("user", userKey)) return { ok: false, code: "INVALID_USER_KEY" };
  const checked = await ctx.store.beginHotRead();
  const key = await ctx.store.findKeyByHash(checked, "user_keys", hashKey(userKey));
  if (!key) return { ok: false, code: "INVALID_USER_KEY" };
  // A rotating key is a refresh token of a browser flow: it is redeemed at the token endpoint
  // only, where each use replaces it (a replay is then seen).
  if (key.rotating) return { ok: false, code: "INVALID_USER_KEY" };
  if (key.revokedAt !== null) return { ok: false, code: "REVOKED_USER_KEY" };
  // A key bound to a DPoP key (a device login's, RFC 9449) is good only with a proof by it:
  // minting a bearer token with it would unbind it.
  if (key.dpopJkt && !proof) return { ok: false, code: "INVALID_USER_KEY" };
  const limit = await perUserKey.take(key.id);
  if (!limit.ok) return { ok: false, code: "RATE_LIMITED", limit };
  // A key bound to a partner (consented to for it) mints for that partner only.
  let boundTo: string | null = key.audience ?? null;
  if (audience === "malformed") return { ok: false, code: "INVALID_AUDIENCE" };
  const { partnerId } = audience;
  if (partnerId !== null) {
    if (!(await ctx.store.findPartner(partnerId))) return { ok: false, code: "INVALID_AUDIENCE" };
    if (boundTo !== null && boundTo !== partnerId) return { ok: false, code: "INVALID_AUDIENCE" };
    boundTo = partnerId;
  }
  let minter: { id: string; name: string } | null = null;
  if (agent) {
    const judged = await judgeAgentJwt(ctx, agent.jwt, (aud) => aud === agent.issuer);
    if (!judged.ok) {
      const description = judged.message.replace(/^Invalid JWT: /, "");
      return { ok: false, code: "INVALID_AGENT_JWT", description };
    }
    if (judged.accountId !== key.ownerId) {
      return {
        ok: false,
        code: "INVALID_AGENT_JWT",
        description: "The agent acts for another person than this user key's",
      };
    }
    minter = { id: judged.agent.id, name: judged.agent.name };
  }
  const proven = proof
    ? await ctx.dpop.verify(proof.proof, {
        method: proof.method,
        url: proof.url,
        requireNonce: false,
        ...(key.dpopJkt && { boundTo: { jkt: key.dpopJkt, holder: "login" as const } }),
      })
    : null;
  if (proven && !proven.ok) {
    return { ok: false, code: "INVALID_DPOP_PROOF", description: proven.description };
  }
  const jkt = proven?.jkt ?? null;
  const { sessionToken, issuedAt, expiresAt } = sealFor(ctx, key, boundTo, jkt, minter?.id);
  ctx.keyUsage.record("user_keys", key.id, issuedAt);
  return { ok: true, sessionToken, expiresAt, jkt, agent: minter, limit };
}

/**
 * Seals a session token of `key` (its id and account), bound to `audience` or to none, and to
 * the DPoP key whose thumbprint is `jkt` when there is one.
 */
export function sealFor(
  ctx: Needs<"clock" | "sealingKeys" | "sessionTokenTtlMs">,
  key: { id: string; ownerId: string },
  audience: string | null,
  jkt?: string | null,
  agentId?: string,
) {
  const issuedAt = ctx.clock();
  const expiresAt = issuedAt + ctx.sessionTokenTtlMs;
  const sessionToken = sealSessionToken(ctx.sealingKeys.current, {
    userKeyId: key.id,
    accountId: key.ownerId,
    issuedAt,
    expiresAt,
    audience,
    ...(jkt && { jkt }),
    ...(agentId && { agentId }),
  });
  return { sessionToken, issuedAt, expiresAt };
}

/** The agent a token or JWT acts as, as a partner learns it. */
type ActingAgent = { id: string; name: string };

type VerifyResult =
  | { ok: true; email: string; expiresAt: number; partnerId: string; agent: ActingAgent | null }
  | { ok: false; code: "INVALID_PARTNER_KEY" | "REVOKED_PARTNER_KEY" }
  | { ok: false; code: "INVALID_SESSION_TOKEN"; partnerKeyId: string }
  | { ok: false; code: "SESSION_TOKEN_PROOF_REQUIRED"; partnerKeyId: string }
  | { ok: false; code: "SESSION_TOKEN_PROOF_INVALID"; partnerKeyId: string; description: string };

/**
 * What a partner learns from a session token: the email of the account that minted it, judged
 * in the order and with the uniform refusals `judgeSessionToken` keeps. A token bound to a key
 * needs the `proof` of the request it came with; one that is not bound ignores it.
 */
export async function verifySessionToken(
  ctx: IdentityContext,
  partnerKey: string,
  sessionToken: string,
  proof: PresentedProof | null = null,
): Promise<VerifyResult> {
  if (isAgentJwt(sessionToken)) return verifyAgentJwt(ctx, partnerKey, sessionToken);
  const judged = await judgeSessionToken(ctx, partnerKey, sessionToken, proof);
  if (!judged.ok) return judged;
  return {
    ok: true,
    email: judged.owner.email,
    expiresAt: judged.claims.expiresAt,
    partnerId: judged.partnerId,
    agent: judged.agent,
  };
}

/**
 * An agent's own JWT (Agent Auth Protocol section 4.3) sent where a session token goes: judged
 * with its `aud` one of the partner's resource URLs (by origin), used once on every instance.
 * Every fault is the uniform INVALID_SESSION_TOKEN, as for a session token.
 */
async function verifyAgentJwt(
  ctx: IdentityContext,
  partnerKey: string,
  jwt: string,
): Promise<VerifyResult> {
  const judgedKey = await judgePartnerKey(ctx, partnerKey);
  if (!judgedKey.ok) return judgedKey;
  const { partner, partnerId } = judgedKey;
  const resources = await ctx.oauth.resourcesOf(partnerId);
  const verdict = await judgeAgentJwt(ctx, jwt, audienceOfResources(resources));
  const now = ctx.clock();
  if (!verdict.ok) {
    ctx.usage.record(partnerId, "invalid_token", now);
    return { ok: false, code: "INVALID_SESSION_TOKEN", partnerKeyId: partner.id };
  }
  const { agent } = verdict;
  ctx.usage.record(partnerId, "success", now, verdict.accountId, agent.id);
  return {
    ok: true,
    email: verdict.email,
    expiresAt: verdict.claims.exp * 1000,
    partnerId,
    agent: { id: agent.id, name: agent.name },
  };
}

type IntrospectionResult =
  | { ok: false; code: "INVALID_PARTNER_KEY" | "REVOKED_PARTNER_KEY" }
  /** `holderRefusal`: a bound token the request's proof did not prove (the extension's answer). */
  | { ok: true; active: false; holderRefusal?: HolderRefusal }
  | {
      ok: true;
      active: true;
      email: string;
      accountId: string;
      /** The partner the token is bound to (the caller); absent when bound to none. */
      audience: string | null;
      /** The OAuth client the token's key was issued to; null for keys made in the dashboard. */
      clientId: string | null;
      issuedAt: number;
      expiresAt: number;
      /** The thumbprint of the key the token is bound to (RFC 9449 `cnf.jkt`); null: bearer. */
      jkt: string | null;
      /** The agent that minted the token; null: none. */
      agent: ActingAgent | null;
    };

/**
 * RFC 7662 for partners: what `verifySessionToken` judges, told as introspection. The partner
 * key is judged the same way; every bad token, whatever its fault, is just inactive. A bound
 * token's proof is checked when the caller tells the request (`proof` not `unchecked`), and a
 * refused one says why.
 */
export async function introspectSessionToken(
  ctx: IdentityContext,
  partnerKey: string,
  token: string,
  proof: HolderProof = "unchecked",
): Promise<IntrospectionResult> {
  const judged = await judgeSessionToken(ctx, partnerKey, token, proof);
  if (!judged.ok) {
    switch (judged.code) {
      case "INVALID_SESSION_TOKEN":
        return { ok: true, active: false };
      case "SESSION_TOKEN_PROOF_REQUIRED":
      case "SESSION_TOKEN_PROOF_INVALID":
        return { ok: true, active: false, holderRefusal: judged };
      default:
        return judged;
    }
  }
  return {
    ok: true,
    active: true,
    email: judged.owner.email,
    accountId: judged.owner.accountId,
    audience: judged.claims.audience,
    clientId: judged.owner.clientId,
    issuedAt: judged.claims.issuedAt,
    expiresAt: judged.claims.expiresAt,
    jkt: judged.claims.jkt ?? null,
    agent: judged.agent,
  };
}

type Judged =
  | {
      ok: true;
      claims: SessionClaims;
      owner: TokenOwner;
      partnerId: string;
      agent: ActingAgent | null;
    }
  | Extract<VerifyResult, { ok: false }>;

/**
 * The partner key is judged first (invalid, then revoked), then the token, then a bound token's
 * proof. Every way a token can be bad — expired, tampered, bound to another partner, from a
 * revoked or deleted key — gives the same INVALID_SESSION_TOKEN, so a partner learns nothing
 * from the difference; only a token that passed all of that has its proof judged.
 */
async function judgeSessionToken(
  ctx: IdentityContext,
  partnerKey: string,
  sessionToken: string,
  proof: HolderProof,
): Promise<Judged> {
  const judgedKey = await judgePartnerKey(ctx, partnerKey);
  if (!judgedKey.ok) return judgedKey;
  const { checked, partner, partnerId, now } = judgedKey;
  const claims = ctx.sealingKeys.open(sessionToken);
  // The owner is read whatever the token's fault, so every refusal does the same work: its time
  // does not tell a forged token from a real one that is expired, revoked or bound elsewhere.
  const owner = await ctx.store.findTokenOwner(checked, claims?.userKeyId ?? NO_KEY);
  const valid =
    claims !== null &&
    isCurrent(ctx, claims, now) &&
    (claims.audience === null || claims.audience === partnerId);
  if (!valid || !owner || owner.revokedAt !== null || owner.accountId !== claims.accountId) {
    ctx.usage.record(partnerId, "invalid_token", now);
    return { ok: false, code: "INVALID_SESSION_TOKEN", partnerKeyId: partner.id };
  }
  // An agent's token holds while its agent does: read on every verification, so revoking the
  // agent (or its host) holds on the next request, on every instance.
  const agent = claims.agentId
    ? ((await findActiveAgent(ctx, claims.agentId, owner.accountId)) ?? "gone")
    : null;
  if (agent === "gone") {
    ctx.usage.record(partnerId, "invalid_token", now);
    return { ok: false, code: "INVALID_SESSION_TOKEN", partnerKeyId: partner.id };
  }
  if (claims.jkt && proof !== "unchecked") {
    const refused = await refusalOfProof(ctx, claims.jkt, sessionToken, proof);
    if (refused) {
      ctx.usage.record(partnerId, refused.outcome, now);
      return { ok: false, partnerKeyId: partner.id, ...refused.refusal };
    }
  }
  ctx.usage.record(partnerId, "success", now, owner.accountId, agent?.id);
  return { ok: true, claims, owner, partnerId, agent };
}

/**
 * A partner key, judged as every partner endpoint judges it: unknown (invalid), then revoked or
 * its partner suspended (answered as revoked: the spec's 403 for a key that no longer works).
 * A working key's use is recorded.
 */
export async function judgePartnerKey(ctx: IdentityContext, partnerKey: string) {
  if (!isWellFormedKey("partner", partnerKey))
    return { ok: false as const, code: "INVALID_PARTNER_KEY" as const };
  const checked = await ctx.store.beginHotRead();
  const partner = await ctx.store.findKeyByHash(checked, "partner_keys", hashKey(partnerKey));
  if (!partner) return { ok: false as const, code: "INVALID_PARTNER_KEY" as const };
  const now = ctx.clock();
  const partnerId = partner.ownerId;
  if (partner.revokedAt !== null || (partner.suspendedAt ?? null) !== null) {
    ctx.usage.record(partnerId, "revoked_partner_key", now);
    return { ok: false as const, code: "REVOKED_PARTNER_KEY" as const };
  }
  ctx.keyUsage.record("partner_keys", partner.id, now);
  return { ok: true as const, checked, partner, partnerId, now };
}

/**
 * Whether a token is within its life: not expired, issued no later than the clock skew allows,
 * and living no longer than this service makes tokens live. A token sealed with a leaked key
 * cannot claim a year, and one claiming a future issue time cannot outlive a key's retirement.
 */
function isCurrent(ctx: IdentityContext, claims: SessionClaims, now: number): boolean {
  return (
    now < claims.expiresAt &&
    claims.issuedAt <= now + CLOCK_SKEW_MS &&
    claims.expiresAt - claims.issuedAt <= ctx.sessionTokenTtlMs
  );
}

/** The user key id looked up for a token that does not open: no key has it. */
const NO_KEY = "00000000-0000-0000-0000-000000000000";
