import type { Verifier } from "@agentpass/verify";

/** The refusal of a token that AgentPass gives only after it accepted the partner key. */
const KEY_JUDGED = "session_token_invalid";

/** A verifier that also remembers whether AgentPass refused our partner key on its last answer. */
interface WatchedVerifier {
  verifier: Verifier;
  /**
   * The code AgentPass refused the partner key with (`partner_key_revoked`, …), from the last
   * answer that said anything of it; null once an answer shows the key accepted. While it is
   * set every authenticated call answers 503, so the instance is not ready.
   */
  partnerKeyRefused(): string | null;
}

/**
 * Watches the answers of `verifier`: a `partner_key_*` code refuses the key; a success, or a
 * refusal of the token that AgentPass makes only once the key is judged (`session_token_invalid`),
 * accepts it again. Any other answer says nothing of the key and changes nothing: no answer
 * (AgentPass unreachable, a 5xx), a 429, or a 400 for a malformed token, which AgentPass gives
 * before it looks at the key and the library gives without asking. `refused` is the state at
 * start (`partner_key_missing` when no key is configured).
 */
export function watchPartnerKey(
  verifier: Verifier,
  refused: string | null = null,
): WatchedVerifier {
  let refusedWith = refused;
  const note = <T extends { ok: boolean; status: number; code?: string }>(result: T): T => {
    const code = result.ok ? undefined : result.code;
    if (code?.startsWith("partner_key_")) refusedWith = code;
    else if (result.ok || code === KEY_JUDGED) refusedWith = null;
    return result;
  };
  const { introspect } = verifier;
  return {
    verifier: {
      verify: async (token, context) => note(await verifier.verify(token, context)),
      ...(introspect && {
        introspect: async (token, context) => note(await introspect.call(verifier, token, context)),
      }),
      // Capability calls say nothing the watch reads: a refused key is answered as a 503.
      ...(verifier.authorizeCapability && {
        authorizeCapability: verifier.authorizeCapability.bind(verifier),
      }),
      ...(verifier.declareCapabilities && {
        declareCapabilities: verifier.declareCapabilities.bind(verifier),
      }),
    },
    partnerKeyRefused: () => refusedWith,
  };
}
