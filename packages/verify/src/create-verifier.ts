import { callIntrospect, type IntrospectResult, TOKEN_INACTIVE } from "./call-introspect.ts";
import { callVerify } from "./call-verify.ts";
import {
  type AuthorizeResult,
  type Capability,
  callAuthorize,
  callDeclare,
  type DeclareResult,
} from "./capabilities.ts";
import { readEnvironment } from "./environment.ts";
import { MISSING_TOKEN } from "./introspect.ts";
import type { CallContext, ServiceCall } from "./post-to-agentpass.ts";
import {
  INVALID_DPOP,
  PROOF_INVALID,
  PROOF_REQUIRED,
  type RequestProof,
  requestProofOf,
  type VerifyContext,
} from "./request-proof.ts";
import { DEFAULT_TIMEOUT_MS, LOCAL_CODES, type VerifyResult } from "./result.ts";
import { checkArguments, serviceBase } from "./verify.ts";

export interface VerifierOptions {
  /** Your partner key (`apk_…`); defaults to the `AGENTPASS_PARTNER_KEY` environment variable. */
  partnerKey?: string;
  /**
   * The AgentPass URL; defaults to `AGENTPASS_URL`. There is no built-in service: with neither,
   * `createVerifier` throws.
   */
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
  /**
   * Hears of a fault that makes verifications fail whatever the token, once per cause until a
   * verification succeeds again: your partner key was refused (`partner_key_invalid`) or revoked
   * (`partner_key_revoked`), AgentPass cannot be reached (`network_error`: the message names the
   * URL and why), or what answers at the URL is not AgentPass's API, or not working
   * (`unexpected_response`: the message names the URL, the status and its code). Your users see
   * 503s meanwhile; this tells you why. Default: one line on `console.error`.
   */
  onError?: (fault: VerifierFault) => void;
}

/** A fault of the partner's setup or of its link to AgentPass, as `onError` hears of it. */
export interface VerifierFault {
  code: "partner_key_invalid" | "partner_key_revoked" | "network_error" | "unexpected_response";
  message: string;
}

export interface Verifier {
  /**
   * Same contract as {@link verify}: never throws. `context` names the request it is made for
   * (sent as `X-Request-Id` and `traceparent`); a success served from the cache sends nothing,
   * and calls for one token that share a request carry the first one's. With `context.dpop`
   * (the request's DPoP proof, method and URL) every call asks AgentPass: a proof is accepted
   * once, so its answer is neither cached nor shared.
   */
  verify(sessionToken: unknown, context?: VerifyContext): Promise<VerifyResult>;
  /**
   * Same contract as {@link introspect}, with this verifier's key, URL, time limit and `onError`;
   * never cached, so a revocation holds on the next call. Optional so that verifiers written by
   * hand (test doubles) need not offer it; `createVerifier`'s always does.
   */
  introspect?(token: unknown, context?: VerifyContext): Promise<IntrospectResult>;
  /**
   * Asks AgentPass whether an agent may execute your capability (Agent Auth Protocol section
   * 5.11): its JWT (for the capability's location, used once), an active grant, arguments that
   * fit the input schema and the grant's constraints. Never throws; never cached. Optional as
   * `introspect` is.
   *
   * @example
   * const allowed = await agentpass.authorizeCapability(token, body.capability, body.arguments);
   * if (!allowed.ok) return res.status(allowed.status).json(allowed.body);
   */
  authorizeCapability?(
    token: unknown,
    capability: unknown,
    args?: unknown,
    context?: CallContext,
  ): Promise<AuthorizeResult>;
  /** Makes `capabilities` the whole of what you offer agents (those left out are withdrawn). */
  declareCapabilities?(capabilities: Capability[]): Promise<DeclareResult>;
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
 * const bound = await agentpass.introspect(token); // bound.ok && bound.aud: minted for you alone
 */
export function createVerifier(options: VerifierOptions = {}): Verifier {
  const partnerKey = options.partnerKey ?? readEnvironment("AGENTPASS_PARTNER_KEY");
  // A setup that cannot work is refused here, at start-up, not as a 503 on every request.
  if (!partnerKey) {
    throw new TypeError(
      "@agentpass/verify: no partner key: pass partnerKey or set AGENTPASS_PARTNER_KEY",
    );
  }
  if (!partnerKey.startsWith("apk_")) {
    throw new TypeError("@agentpass/verify: partnerKey is not a partner key (apk_…)");
  }
  const resolved = serviceBase(options.apiUrl);
  if (typeof resolved !== "string") {
    throw new TypeError(
      resolved.code === LOCAL_CODES.apiUrlMissing
        ? "@agentpass/verify: no AgentPass URL: pass apiUrl or set AGENTPASS_URL"
        : `@agentpass/verify: apiUrl is not an http(s) URL: ${String(options.apiUrl || readEnvironment("AGENTPASS_URL"))}`,
    );
  }
  const base: string = resolved;
  const endpoint = `${base}/api/verify`;
  const introspectUrl = `${base}/oauth/introspect`;
  const onError = options.onError ?? reportOnConsole;
  /** The cause last told to `onError` (its code and message), until a call succeeds. */
  let reported: string | undefined;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const cacheTtlMs = Math.min(MAX_CACHE_TTL_MS, Math.max(0, options.cacheTtlMs ?? 0));
  const now = options.now ?? Date.now;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  // Keyed by a digest of the token: the cache never holds a usable token.
  const cache = new Map<string, { result: VerifyResult; until: number }>();
  // With a cache, the calls for one token that come while it is being asked share that request:
  // when an entry lapses under load, every request in flight for the token would ask at once.
  const asking = new Map<string, Promise<VerifyResult>>();

  /**
   * Tells `onError` of a fault that fails every verification, once per cause until a call
   * succeeds again; `failure` is why no answer came back, when none did.
   */
  function report(result: VerifyResult | IntrospectResult, failure: string | undefined): void {
    const fault = faultOf(result, base, failure);
    const cause = fault && `${fault.code} ${fault.message}`;
    if (fault && cause !== reported) onError(fault);
    if (fault || result.ok) reported = cause ?? undefined;
  }

  function serviceCall(endpoint: string, context?: CallContext): ServiceCall {
    return { endpoint, partnerKey: partnerKey as string, timeoutMs, fetch: fetchImpl, context };
  }

  /** Tells `onError` why a capability call got no verdict, once per cause as `report` does. */
  function tell(message: string, failure: string | undefined): void {
    const fault: VerifierFault = failure
      ? { code: "network_error", message: `AgentPass cannot be reached at ${base} (${failure})` }
      : message.includes("partner_key_revoked")
        ? { code: "partner_key_revoked", message: "AgentPass: your partner key has been revoked" }
        : message.includes("partner key")
          ? { code: "partner_key_invalid", message: "AgentPass: your partner key is not valid" }
          : { code: "unexpected_response", message: `AgentPass at ${base}: ${message}` };
    const cause = `${fault.code} ${fault.message}`;
    if (cause !== reported) onError(fault);
    reported = cause;
  }

  /** AgentPass's answer for `token` (`callVerify` never throws). */
  const ask = async (
    token: string,
    context: VerifyContext | undefined,
    dpop?: RequestProof,
  ): Promise<VerifyResult> => {
    let failure: string | undefined;
    const result = await callVerify({
      endpoint,
      partnerKey,
      sessionToken: token,
      dpop,
      timeoutMs,
      fetch: fetchImpl,
      context,
      onFailure: (reason) => {
        failure = reason;
      },
    });
    report(result, failure);
    return result;
  };

  /** Caches a success until `cacheTtlMs` from now, never past the token's own expiry. */
  const keep = (key: string, result: VerifyResult): void => {
    if (!result.ok || !result.expiresAt) return;
    const until = Math.min(now() + cacheTtlMs, result.expiresAt.getTime());
    if (until <= now()) return;
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value as string);
    cache.set(key, { result, until });
  };

  return {
    async verify(sessionToken, context) {
      const invalid = checkArguments(partnerKey, sessionToken, endpoint);
      if (invalid) return invalid;
      const proof = requestProofOf(context);
      if (!proof.ok) return proof;
      const { dpop } = proof;
      const token = sessionToken as string;
      // A proof is spent by its check: the answer is this request's alone. Caching or sharing it
      // would let a replayed proof (or none) ride on another request's success. So is an agent's
      // JWT (Agent Auth Protocol), used once: a cached answer would accept its replay.
      if (cacheTtlMs === 0 || dpop || isAgentJwt(token)) return ask(token, context, dpop);
      const key = await digest(token);
      const hit = cache.get(key);
      if (hit && hit.until > now()) return hit.result;
      if (hit) cache.delete(key);
      let answer = asking.get(key);
      if (!answer) {
        answer = ask(token, context)
          .then((result) => {
            keep(key, result);
            return result;
          })
          .finally(() => asking.delete(key));
        asking.set(key, answer);
      }
      return answer;
    },
    async authorizeCapability(token, capability, args, context) {
      let failure: string | undefined;
      const result = await callAuthorize(
        {
          ...serviceCall(`${base}/capability/authorize`, context),
          onFailure: (r) => {
            failure = r;
          },
        },
        token,
        capability,
        args,
      );
      if (!result.ok && result.status === 503) tell(result.message, failure);
      return result;
    },
    async declareCapabilities(capabilities) {
      let failure: string | undefined;
      const result = await callDeclare(
        {
          ...serviceCall(`${base}/partner/capabilities`),
          onFailure: (r) => {
            failure = r;
          },
        },
        capabilities,
      );
      if (!result.ok && result.status === 503) tell(result.message, failure);
      return result;
    },
    async introspect(token, context) {
      if (typeof token !== "string" || token === "") return MISSING_TOKEN;
      const proof = requestProofOf(context);
      if (!proof.ok) return proof;
      let failure: string | undefined;
      const result = await callIntrospect({
        endpoint: introspectUrl,
        partnerKey,
        token,
        dpop: proof.dpop,
        timeoutMs,
        fetch: fetchImpl,
        context,
        onFailure: (reason) => {
          failure = reason;
        },
      });
      report(result, failure);
      return result;
    },
  };
}

/**
 * Whether a token is an agent's JWT (its header says `typ: agent+jwt`) rather than a session
 * token (`aps_…`): read without trusting it, only to know it must not be cached.
 */
export function isAgentJwt(token: string): boolean {
  if (!token.startsWith("eyJ")) return false;
  try {
    const header = JSON.parse(
      atob(token.slice(0, token.indexOf(".")).replaceAll("-", "+").replaceAll("_", "/")),
    );
    return header?.typ === "agent+jwt";
  } catch {
    return false;
  }
}

interface SyncHash {
  hash?(algorithm: "sha256", data: string, encoding: "hex"): string;
}

// Node (20.16+) and runtimes that imitate it offer a synchronous one-shot SHA-256; WebCrypto's
// digest is a thread-pool job and a promise on every authenticated request.
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

/** The verdicts on a token (or its proof) itself: the agent's fault, never the partner's. */
const TOKEN_VERDICTS = new Set([
  "session_token_invalid",
  "session_token_field_invalid",
  PROOF_REQUIRED,
  PROOF_INVALID,
  INVALID_DPOP.code,
  TOKEN_INACTIVE,
  MISSING_TOKEN.code,
]);

/**
 * The fault a result shows in the partner's setup or its link to AgentPass at `base`, or null
 * for a success and for a verdict on the token.
 */
function faultOf(
  result: VerifyResult | IntrospectResult,
  base: string,
  failure: string | undefined,
): VerifierFault | null {
  if (result.ok || TOKEN_VERDICTS.has(result.code)) return null;
  switch (result.code) {
    case "partner_key_revoked":
      return {
        code: "partner_key_revoked",
        message: "AgentPass: your partner key has been revoked",
      };
    case "partner_key_invalid":
    case "partner_key_missing":
    case "partner_key_missing_or_invalid":
    case "invalid_client": // OAuth's word for it, from the introspection endpoint
      return { code: "partner_key_invalid", message: "AgentPass: your partner key is not valid" };
    case LOCAL_CODES.networkError:
      return {
        code: "network_error",
        message: `AgentPass cannot be reached at ${base}${failure ? ` (${failure})` : ""}`,
      };
    default: {
      // AgentPass's own code says what failed; a page that is not its API has none to say.
      const code = result.code === LOCAL_CODES.unexpectedResponse ? "" : ` (${result.code})`;
      return {
        code: "unexpected_response",
        message: `AgentPass at ${base} answered HTTP ${result.status}${code} instead of a verification`,
      };
    }
  }
}

function reportOnConsole(fault: VerifierFault): void {
  console.error(
    `${fault.message} (${fault.code}); every request will answer 503 until it is fixed`,
  );
}

/** A verifier as given to a middleware, or one made from options (refusing a broken setup). */
export function toVerifier(given: Verifier | VerifierOptions): Verifier {
  return "verify" in given && typeof given.verify === "function"
    ? (given as Verifier)
    : createVerifier(given as VerifierOptions);
}
