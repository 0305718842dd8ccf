import { callVerify } from "./call-verify.ts";
import { DEFAULT_TIMEOUT_MS, type VerifyResult } from "./result.ts";
import { checkArguments, verifyEndpoint } from "./verify.ts";

export interface VerifierOptions {
  /** Your partner key (`apk_…`). */
  partnerKey: string;
  /** The AgentPass URL; defaults to the public service. */
  apiUrl?: string;
  /** Per-call time limit; past it the result is the network error. Default 5000. */
  timeoutMs?: number;
  /**
   * How long a successful verification may be reused, in ms: the longest a revocation (of the
   * person's key, or of yours) can take to reach you. Default 0 (off: every revocation holds on
   * your next call); at most {@link MAX_CACHE_TTL_MS}. Never longer than the token's own
   * remaining life; failures are never cached. During an AgentPass outage a cached success is
   * served only until it lapses, never beyond.
   */
  cacheTtlMs?: number;
  /** Clock in epoch ms, for tests. */
  now?: () => number;
  /** A fetch implementation, for runtimes or tests that need another. */
  fetch?: typeof fetch;
}

export interface Verifier {
  /** Same contract as {@link verify}: never throws. */
  verify(sessionToken: unknown): Promise<VerifyResult>;
}

const MAX_CACHED = 10_000;

/**
 * The longest a success may be cached, whatever `cacheTtlMs` asks: a revocation reaches every
 * partner within 5 seconds.
 */
export const MAX_CACHE_TTL_MS = 5_000;

/**
 * A verifier for a server: the partner key and URL given once, connections kept alive by the
 * runtime's fetch, and an optional short cache of successful results.
 *
 * @example
 * import { createVerifier } from "@agentpass/verify";
 * const agentpass = createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY!, cacheTtlMs: 5_000 });
 * const result = await agentpass.verify(request.headers.get("x-session-token"));
 */
export function createVerifier(options: VerifierOptions): Verifier {
  const endpoint = verifyEndpoint(options.apiUrl);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cacheTtlMs = Math.min(MAX_CACHE_TTL_MS, Math.max(0, options.cacheTtlMs ?? 0));
  const now = options.now ?? Date.now;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  // Keyed by a digest of the token: the cache never holds a usable token.
  const cache = new Map<string, { result: VerifyResult; until: number }>();

  return {
    async verify(sessionToken) {
      const invalid = checkArguments(options.partnerKey, sessionToken, endpoint);
      if (invalid) return invalid;
      const token = sessionToken as string;
      const key = cacheTtlMs > 0 ? await digest(token) : "";
      if (cacheTtlMs > 0) {
        const hit = cache.get(key);
        if (hit && hit.until > now()) return hit.result;
        if (hit) cache.delete(key);
      }
      const result = await callVerify({
        endpoint: endpoint as string,
        partnerKey: options.partnerKey,
        sessionToken: token,
        timeoutMs,
        fetch: fetchImpl,
      });
      if (cacheTtlMs > 0 && result.ok && result.expiresAt) {
        const until = Math.min(now() + cacheTtlMs, result.expiresAt.getTime());
        if (until > now()) {
          if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
          cache.set(key, { result, until });
        }
      }
      return result;
    },
  };
}

interface SyncHash {
  hash?(algorithm: "sha256", data: string, encoding: "hex"): string;
}

// Node (20.16+) and runtimes that imitate it offer a synchronous one-shot SHA-256; WebCrypto's
// digest is a thread-pool job and a promise, measured at 13 % of the notes API's CPU on its list
// route (and the one-shot `hash` at 250 ns a token against 580 for a `Hash` object).
const syncHash = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.("node:crypto") as SyncHash | undefined;

async function digest(token: string): Promise<string> {
  if (syncHash?.hash) return syncHash.hash("sha256", token, "hex");
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  let hex = "";
  for (const byte of new Uint8Array(bytes)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
