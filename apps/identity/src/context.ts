import type { KeyObject } from "node:crypto";
import type { AgentLifetimes, AgentUseRecorder } from "./domain/agents.ts";
import type { AuditTrail } from "./domain/audit.ts";
import type { Clock } from "./domain/clock.ts";
import type { KeyUsageRecorder } from "./domain/key-usage.ts";
import type { SealingKeyRing } from "./domain/sealing-keys.ts";
import type { UsageRecorder } from "./domain/usage-recorder.ts";
import type { DpopVerifier } from "./infra/dpop-proofs.ts";
import type { AgentStore } from "./store/agent-store.ts";
import type { CapabilityStore } from "./store/capability-store.ts";
import type { OAuthStore } from "./store/oauth-store.ts";
import type { Store } from "./store/store.ts";
import type { UsageStore } from "./store/usage-store.ts";
import type { WebStore } from "./store/web-store.ts";

/** What the domain functions run against, passed in rather than imported. */
export interface IdentityContext {
  store: Store;
  oauth: OAuthStore;
  clock: Clock;
  sealingKeys: SealingKeyRing;
  keyUsage: KeyUsageRecorder;
  web: WebStore;
  usageStore: UsageStore;
  usage: UsageRecorder;
  /** The audit log of security events: a stored row and a JSON log line each. */
  audit: AuditTrail;
  sessionTokenTtlMs: number;
  /**
   * Checks DPoP proofs (RFC 9449) and spends their `jti` where the rate limits count, shared by
   * every instance: a proof is accepted once, whichever instance sees it. Its nonces are an HMAC
   * under a key derived from the service's secret, so every instance accepts the same ones.
   */
  dpop: DpopVerifier;
  /** Agents and their hosts (`domain/agents.ts`): never cached, so revocations hold at once. */
  agents: AgentStore;
  /** Capabilities partners offer agents, and agents' grants of them (`domain/capabilities.ts`). */
  capabilities: CapabilityStore;
  /** Agents' and hosts' last use, written in batches. */
  agentUse: AgentUseRecorder;
  agentLifetimes: AgentLifetimes;
  /**
   * One-time values (JWT `jti`s) spent where the rate limits count, shared by every instance:
   * true the first time a key is seen within `ttlMs`.
   */
  seen: { seenOnce(key: string, ttlMs: number): Promise<boolean> };
  /**
   * Keys derived from the service's secret (`deriveServiceKey`), never in the database:
   * `shortCodes` keys the HMAC stored for sign-in codes and device user codes; `refreshTokens`
   * derives a rotating refresh token's successor (`domain/grants.ts`).
   */
  keys: { shortCodes: KeyObject; refreshTokens: KeyObject };
}

/** The part of the context a function uses: `ctx: Needs<"store" | "clock">`. */
export type Needs<K extends keyof IdentityContext> = Pick<IdentityContext, K>;
