import type { Needs } from "../context.ts";
import type { ProofFault } from "../infra/dpop-proofs.ts";
import type { VerifyOutcome } from "./usage-recorder.ts";

/**
 * The holder of a session token bound to a key (RFC 9449): proven by the DPoP proof of the
 * request the token came with, judged for partners by `judgeSessionToken` once the token passed.
 */

/** A DPoP proof (RFC 9449) as a request carried it, with that request's method and URL. */
export interface PresentedProof {
  proof: string;
  method: string;
  url: string;
}

/** A bound token whose request does not prove its holder: no proof, or why the proof fails. */
export type HolderRefusal =
  | { code: "SESSION_TOKEN_PROOF_REQUIRED" }
  | { code: "SESSION_TOKEN_PROOF_INVALID"; description: string };

/**
 * How the holder of a token bound to a key is proven: by the DPoP proof of the request the token
 * came with (`null`: that request carried none, which refuses the token), or not here at all
 * (`unchecked`: introspection, whose caller checks the proof itself against `cnf.jkt`).
 */
export type HolderProof = PresentedProof | null | "unchecked";

/**
 * Why the request a token bound to the key `jkt` came with does not prove its holder (RFC 9449
 * section 7): it has no proof, or one for another method, URL, time or token (`ath`), signed by
 * another key, or used before; null: it does. The `jti` is spent last, once every other check
 * passed, in the store every instance shares: a proof captured at one partner is refused at all.
 */
export async function refusalOfProof(
  ctx: Needs<"dpop">,
  jkt: string,
  sessionToken: string,
  proof: PresentedProof | null,
): Promise<{ refusal: HolderRefusal; outcome: VerifyOutcome } | null> {
  if (!proof) {
    return { refusal: { code: "SESSION_TOKEN_PROOF_REQUIRED" }, outcome: "proof_required" };
  }
  const checked = await ctx.dpop.verify(proof.proof, {
    method: proof.method,
    url: proof.url,
    requireNonce: false,
    accessToken: sessionToken,
    boundTo: { jkt, holder: "token" },
  });
  if (checked.ok) return null;
  return {
    refusal: { code: "SESSION_TOKEN_PROOF_INVALID", description: checked.description },
    outcome: PROOF_OUTCOMES[checked.fault],
  };
}

/** A refused proof as a partner's usage counts it. */
const PROOF_OUTCOMES = {
  invalid: "proof_invalid",
  replayed: "proof_replayed",
  wrong_key: "proof_wrong_key",
} as const satisfies Record<ProofFault, VerifyOutcome>;
