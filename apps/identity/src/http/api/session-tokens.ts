import {
  defineEndpoint,
  type Endpoint,
  HttpError,
  isoTime,
  RATE_LIMIT_HEADERS,
  readBearer,
  unauthorized,
} from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { mintSessionToken } from "../../domain/session-tokens.ts";
import { type RateLimiter, rateLimitHeaders, tooManyRequests } from "../../infra/rate-limit.ts";
import { ERRORS, unauthorizedNaming } from "../errors.ts";

/** What `MintRequest` makes of an audience that is not a partner id: judged after the key. */
const MALFORMED = "malformed";

/** An agent's JWT: more than any JWT an agent signs. */
const MAX_AGENT_JWT_CHARS = 8192;

const MintRequest = z.object({
  agent: z.string().max(MAX_AGENT_JWT_CHARS).optional().catch(MALFORMED).meta({
    description:
      "An agent's JWT (Agent Auth Protocol `agent+jwt`, `aud` this service's issuer) when the agent mints as itself: the token names the agent, and partners learn `agent: {id, name}` beside the email. The agent must be the user key's own person's",
    example: "eyJ0eXAiOiJhZ2VudCtqd3QiLCJhbGciOiJFZERTQSJ9…",
  }),
  audience: z
    .uuid()
    .nullish()
    // The domain refuses a malformed audience only after the key, so an unauthenticated caller
    // gets 401 whatever it sent: the schema marks it rather than refusing it.
    .catch(MALFORMED)
    .meta({
      description: "Partner id the token is bound to; omit for any partner",
      // What a client sends is a partner id or nothing: the marker is no default of the API.
      override: ({ jsonSchema }) => {
        delete jsonSchema.default;
      },
    }),
});
const MintResponse = z.object({
  sessionToken: z.string().meta({ description: "Opaque token starting with aps_" }),
  expiresAt: z.iso.datetime().meta({ description: "When the token stops verifying" }),
  agent: z
    .object({ id: z.string(), name: z.string() })
    .optional()
    .meta({ description: "The agent the token names, when it was minted with `agent`" }),
  tokenType: z.literal("DPoP").optional().meta({
    description:
      "Present when the request carried a DPoP proof: the token is bound to its key, and is sent as `Authorization: DPoP` with a fresh proof for each request",
  }),
});

const REFUSALS = {
  missingOrInvalidUserKey: unauthorized(ERRORS.user_key_missing_or_invalid),
  missingUserKey: unauthorized(ERRORS.user_key_missing),
  invalidJsonBody: new HttpError(ERRORS.invalid_json_body),
  INVALID_USER_KEY: unauthorized(ERRORS.user_key_invalid),
  REVOKED_USER_KEY: new HttpError(ERRORS.user_key_revoked),
  INVALID_AUDIENCE: new HttpError(ERRORS.audience_invalid),
} as const;
// (INVALID_AGENT_JWT and INVALID_DPOP_PROOF name the check that failed: `unauthorizedNaming`.)

interface MintLimits {
  /** Mints per working user key. */
  perUserKey: RateLimiter;
  /** Unknown or revoked keys per client address. */
  badKeysPerIp: RateLimiter;
}

/**
 * POST /api/session-tokens: trades a user key (Bearer) for a session token, bound to the key of
 * the `DPoP` proof (RFC 9449) when the request carries one. Checked in this order:
 * Authorization header → body is a JSON object (or empty) → user key (401 / 403) → audience →
 * proof, so an unauthenticated caller learns nothing about which partners exist or what it
 * proved. Every mint by a working key counts against that key (429 past the limit, RateLimit-*
 * headers on every counted answer); an unknown or revoked key counts against the client address.
 */
export function sessionTokensEndpoint(
  ctx: IdentityContext,
  publicUrl: string,
  limits: MintLimits,
): Endpoint {
  // Section 4.3: htu is the URL the client addressed, PUBLIC_URL's, never one read from headers.
  const mintUrl = `${publicUrl}/api/session-tokens`;
  return defineEndpoint({
    method: "POST",
    path: "/api/session-tokens",
    outcome: "mint",
    operation: {
      operationId: "mintSessionToken",
      tags: ["Agents"],
      summary: "Trade a user key for a session token (the agent CLI does this)",
      description:
        "With a `DPoP` header (an RFC 9449 proof for `POST` and this URL, no `ath`, no nonce), the token is bound to the proof's key: `tokenType` is `DPoP`, and partners verify it only with a fresh proof by that key. A user key from a DPoP device login mints only with a proof by its own key.",
      security: [{ userKey: [] }],
      responses: {
        "201": {
          description: "A new session token",
          headers: RATE_LIMIT_HEADERS,
          content: {
            "application/json": {
              schema: MintResponse,
              examples: {
                minted: {
                  value: { sessionToken: "aps_…", expiresAt: "2026-11-25T12:05:00.000Z" },
                },
                bound: {
                  value: {
                    sessionToken: "aps_…",
                    expiresAt: "2026-11-25T12:05:00.000Z",
                    tokenType: "DPoP",
                  },
                },
              },
            },
          },
        },
      },
    },
    errors: [
      ERRORS.invalid_json_body,
      ERRORS.audience_invalid,
      ERRORS.body_too_large,
      ERRORS.user_key_missing_or_invalid,
      ERRORS.user_key_missing,
      ERRORS.user_key_invalid,
      ERRORS.user_key_revoked,
      ERRORS.dpop_proof_invalid,
      ERRORS.agent_jwt_invalid,
      ERRORS.rate_limited,
    ],
    admit(request) {
      const bearer = readBearer(request.header("authorization"));
      if (bearer.kind === "present") return { ok: true, admitted: bearer.value };
      const answer =
        bearer.kind === "missing" ? REFUSALS.missingOrInvalidUserKey : REFUSALS.missingUserKey;
      return { ok: false, answer };
    },
    // Not JSON, or JSON but not an object: the only input refused before the key is checked.
    input: { body: MintRequest, bodyRequired: false },
    refuseInput: () => REFUSALS.invalidJsonBody,
    async handle(request, { admitted: userKey, body }) {
      const audience =
        body.audience === MALFORMED ? MALFORMED : { partnerId: body.audience ?? null };
      const header = request.header("dpop");
      const proof =
        header === undefined ? null : { proof: header.trim(), method: "POST", url: mintUrl };
      // A malformed `agent` is judged like any bad JWT: after the key, never before it.
      const agent = body.agent === undefined ? null : { jwt: body.agent, issuer: publicUrl };
      const result = await mintSessionToken(
        ctx,
        userKey,
        audience,
        limits.perUserKey,
        proof,
        agent,
      );
      if (result.ok) {
        return {
          status: 201,
          body: {
            sessionToken: result.sessionToken,
            expiresAt: isoTime(result.expiresAt),
            ...(result.agent && { agent: result.agent }),
            ...(result.jkt && { tokenType: "DPoP" }),
          },
          headers: { "Cache-Control": "no-store", ...rateLimitHeaders(result.limit) },
        };
      }
      if (result.code === "RATE_LIMITED") return tooManyRequests(result.limit);
      if (result.code === "INVALID_DPOP_PROOF") {
        return unauthorizedNaming(ERRORS.dpop_proof_invalid, result.description);
      }
      if (result.code === "INVALID_AGENT_JWT") {
        return unauthorizedNaming(ERRORS.agent_jwt_invalid, result.description);
      }
      if (result.code === "INVALID_USER_KEY" || result.code === "REVOKED_USER_KEY") {
        const limited = await limits.badKeysPerIp.take(request.clientIp());
        if (!limited.ok) return tooManyRequests(limited);
      }
      return REFUSALS[result.code];
    },
  });
}
