import {
  defineEndpoint,
  type Endpoint,
  HttpError,
  isoTime,
  readBearer,
  unauthorized,
} from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { verifySessionToken } from "../../domain/session-tokens.ts";
import { type RateLimiter, tooManyRequests } from "../../infra/rate-limit.ts";
import { ERRORS, unauthorizedNaming } from "../errors.ts";

/** Each of the `dpop` fields: more than any proof or URL a partner is sent. */
const MAX_DPOP_FIELD_CHARS = 8192;

const DpopRequest = z
  .object({
    proof: z.string().max(MAX_DPOP_FIELD_CHARS).optional().meta({
      description:
        "The request's `DPoP` header (RFC 9449 proof), as received; omit when it had none",
      example: "eyJ0eXAiOiJkcG9wK2p3dCIs…",
    }),
    method: z.string().min(1).max(MAX_DPOP_FIELD_CHARS).meta({
      description: "The request's HTTP method, as received (the proof's `htm`)",
      example: "GET",
    }),
    url: z
      .url({ protocol: /^https?$/ })
      .max(MAX_DPOP_FIELD_CHARS)
      .meta({
        description:
          "The absolute URL the request was made to, with the partner's public origin (the proof's `htu`); a query is ignored",
        example: "https://partner.example/api/notes",
      }),
  })
  .meta({
    description:
      "The request the agent sent the token with, when it sent it as `Authorization: DPoP`. A token bound to a key (minted with a DPoP proof) verifies only with a proof of this request by that key, each proof once; a token not bound ignores it",
  });

const VerifyRequest = z.object({
  sessionToken: z.string().min(1).meta({
    description:
      "The token the agent sent: a session token (`aps_…`), or an agent's own JWT (Agent Auth Protocol `agent+jwt`, whose `aud` is one of this partner's resource URLs; each is accepted once)",
    example: "aps_…",
  }),
  dpop: DpopRequest.optional(),
});
const VerifyResponse = z.object({
  email: z.string().meta({ description: "The verified login email", example: "ada@example.com" }),
  agent: z
    .object({
      id: z.string().meta({ example: "agt_3kT9xQ2mZ0aB4cD5eF6gH7" }),
      name: z.string().meta({ description: "The agent's own name, as its person approved it" }),
    })
    .optional()
    .meta({
      description:
        "The agent acting for the person, for an agent's JWT or a token an agent minted; absent otherwise, so a token without an agent answers exactly `{email}`",
    }),
});
const TOKEN_EXPIRES_HEADER = "AgentPass-Token-Expires-At";

const REFUSALS = {
  missingOrInvalidPartnerKey: unauthorized(ERRORS.partner_key_missing_or_invalid),
  missingPartnerKey: unauthorized(ERRORS.partner_key_missing),
  invalidJsonBody: new HttpError(ERRORS.invalid_json_body),
  invalidSessionTokenField: new HttpError(ERRORS.session_token_field_invalid),
  invalidDpopField: new HttpError(ERRORS.dpop_field_invalid),
  INVALID_PARTNER_KEY: unauthorized(ERRORS.partner_key_invalid),
  REVOKED_PARTNER_KEY: new HttpError(ERRORS.partner_key_revoked),
  INVALID_SESSION_TOKEN: unauthorized(ERRORS.session_token_invalid),
  SESSION_TOKEN_PROOF_REQUIRED: unauthorized(ERRORS.session_token_proof_required),
} as const;

interface VerifyLimits {
  /** Failed verifications (bad session tokens, refused proofs) per partner key. */
  perPartnerKey: RateLimiter;
  /** Unknown or revoked keys per client address. */
  badKeysPerIp: RateLimiter;
}

/**
 * POST /api/verify: a partner (its key as Bearer) turns a session token into the email of the
 * person who minted it. Checked in this order: Authorization header → body is JSON →
 * sessionToken → dpop → partner key → session token → a bound token's proof. Only failures
 * are counted, so a success costs no write (but a proof's one-time `jti`): a bad session token
 * or proof against the partner key, an unknown or revoked partner key against the client
 * address. Past the limit the failure's answer becomes 429.
 */
export function verifyEndpoint(ctx: IdentityContext, limits: VerifyLimits): Endpoint {
  return defineEndpoint({
    method: "POST",
    path: "/api/verify",
    outcome: "verify",
    operation: {
      operationId: "verifySessionToken",
      tags: ["Partners"],
      summary: "Turn a session token into the verified email of the person who minted it",
      description:
        "A token minted with a DPoP proof is bound to the agent's key (RFC 9449): send `dpop`, the method, URL and `DPoP` header of the request it came with. Without it such a token is `session_token_proof_required`; a proof that fails a check is `session_token_proof_invalid`, whose message names the check (`Invalid DPoP proof: The DPoP proof's htu is not this URL`). Each proof is accepted once, on every instance and for every partner. A token not bound ignores `dpop`.",
      security: [{ partnerKey: [] }],
      responses: {
        "200": {
          description: "The token is valid",
          headers: {
            [TOKEN_EXPIRES_HEADER]: {
              description:
                "When the token expires (ISO 8601). A partner that caches a success keeps it at most 5 s and never past this time, so a revocation holds within 5 s",
              schema: { type: "string", format: "date-time" },
            },
          },
          content: { "application/json": { schema: VerifyResponse } },
        },
      },
    },
    errors: [
      ERRORS.invalid_json_body,
      ERRORS.session_token_field_invalid,
      ERRORS.dpop_field_invalid,
      ERRORS.body_too_large,
      ERRORS.partner_key_missing_or_invalid,
      ERRORS.partner_key_missing,
      ERRORS.partner_key_invalid,
      ERRORS.session_token_invalid,
      ERRORS.session_token_proof_required,
      ERRORS.session_token_proof_invalid,
      ERRORS.partner_key_revoked,
      ERRORS.rate_limited,
    ],
    admit(request) {
      const bearer = readBearer(request.header("authorization"));
      if (bearer.kind === "present") return { ok: true, admitted: bearer.value };
      const answer =
        bearer.kind === "missing"
          ? REFUSALS.missingOrInvalidPartnerKey
          : REFUSALS.missingPartnerKey;
      return { ok: false, answer };
    },
    input: { body: VerifyRequest },
    refuseInput(failure) {
      if (failure.problem === "not_json") return REFUSALS.invalidJsonBody;
      // sessionToken is judged first: only a body whose every fault is in `dpop` is refused so.
      const inDpop =
        failure.problem === "schema" &&
        failure.error.issues.every((issue) => issue.path[0] === "dpop");
      return inDpop ? REFUSALS.invalidDpopField : REFUSALS.invalidSessionTokenField;
    },
    async handle(request, { admitted: partnerKey, body }) {
      const { sessionToken, dpop } = body;
      // A `dpop` without a proof is a request that had none: a bound token is refused for it.
      const proof =
        dpop?.proof === undefined
          ? null
          : { proof: dpop.proof, method: dpop.method, url: dpop.url };
      const result = await verifySessionToken(ctx, partnerKey, sessionToken, proof);
      if (result.ok) {
        return {
          status: 200,
          body: { email: result.email, ...(result.agent && { agent: result.agent }) },
          headers: {
            "Cache-Control": "no-store",
            [TOKEN_EXPIRES_HEADER]: isoTime(result.expiresAt),
          },
        };
      }
      // A working partner key's refusals (of a token or a proof) spend its failure budget.
      const limited =
        "partnerKeyId" in result
          ? await limits.perPartnerKey.take(result.partnerKeyId)
          : await limits.badKeysPerIp.take(request.clientIp());
      if (!limited.ok) return tooManyRequests(limited);
      return result.code === "SESSION_TOKEN_PROOF_INVALID"
        ? unauthorizedNaming(ERRORS.session_token_proof_invalid, result.description)
        : REFUSALS[result.code];
    },
  });
}
