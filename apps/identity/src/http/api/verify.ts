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
import { ERRORS } from "../errors.ts";

const VerifyRequest = z.object({
  sessionToken: z
    .string()
    .min(1)
    .meta({ description: "The token the agent sent", example: "aps_…" }),
});
const VerifyResponse = z.object({
  email: z.string().meta({ description: "The verified login email", example: "ada@example.com" }),
});
const TOKEN_EXPIRES_HEADER = "AgentPass-Token-Expires-At";

const REFUSALS = {
  missingOrInvalidPartnerKey: unauthorized(ERRORS.partner_key_missing_or_invalid),
  missingPartnerKey: unauthorized(ERRORS.partner_key_missing),
  invalidJsonBody: new HttpError(ERRORS.invalid_json_body),
  invalidSessionTokenField: new HttpError(ERRORS.session_token_field_invalid),
  INVALID_PARTNER_KEY: unauthorized(ERRORS.partner_key_invalid),
  REVOKED_PARTNER_KEY: new HttpError(ERRORS.partner_key_revoked),
  INVALID_SESSION_TOKEN: unauthorized(ERRORS.session_token_invalid),
} as const;

interface VerifyLimits {
  /** Failed verifications (bad session tokens) per partner key. */
  perPartnerKey: RateLimiter;
  /** Unknown or revoked keys per client address. */
  badKeysPerIp: RateLimiter;
}

/**
 * POST /api/verify: a partner (its key as Bearer) turns a session token into the email of the
 * person who minted it. Checked in this order: Authorization header → body is JSON →
 * sessionToken → partner key → session token. Only failures are counted, so a success costs no
 * write: a bad session token against the partner key, an unknown or revoked partner key against
 * the client address. Past the limit the failure's answer becomes 429.
 */
export function verifyEndpoint(ctx: IdentityContext, limits: VerifyLimits): Endpoint {
  return defineEndpoint({
    method: "POST",
    path: "/api/verify",
    outcome: "verify",
    operation: {
      operationId: "verifySessionToken",
      summary: "Turn a session token into the verified email of the person who minted it",
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
      ERRORS.body_too_large,
      ERRORS.partner_key_missing_or_invalid,
      ERRORS.partner_key_missing,
      ERRORS.partner_key_invalid,
      ERRORS.session_token_invalid,
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
    refuseInput: (failure) =>
      failure.problem === "not_json" ? REFUSALS.invalidJsonBody : REFUSALS.invalidSessionTokenField,
    async handle(request, { admitted: partnerKey, body }) {
      const result = await verifySessionToken(ctx, partnerKey, body.sessionToken);
      if (result.ok) {
        return {
          status: 200,
          body: { email: result.email },
          headers: {
            "Cache-Control": "no-store",
            [TOKEN_EXPIRES_HEADER]: isoTime(result.expiresAt),
          },
        };
      }
      const limited =
        result.code === "INVALID_SESSION_TOKEN"
          ? await limits.perPartnerKey.take(result.partnerKeyId)
          : await limits.badKeysPerIp.take(request.clientIp());
      return limited.ok ? REFUSALS[result.code] : tooManyRequests(limited);
    },
  });
}
