import { defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import { introspectSessionToken } from "../../../domain/session-tokens.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import {
  COMMON_REFUSALS,
  formInput,
  MAX_FORM_BYTES,
  NO_STORE,
  oauthError,
  refusal,
  renderOAuthError,
  TokenForm,
  tooManyRequests,
} from "./wire.ts";

const IntrospectionResponse = z
  .object({
    active: z.boolean(),
    email: z.string().optional(),
    sub: z.string().optional(),
    aud: z.string().optional(),
    client_id: z.string().optional(),
    iat: z.number().optional(),
    exp: z.number().optional(),
    iss: z.string().optional(),
    token_type: z.enum(["Bearer", "DPoP"]).optional(),
    cnf: z
      .object({ jkt: z.string() })
      .optional()
      .meta({ description: "RFC 9449: the thumbprint of the key a DPoP-bound token needs" }),
  })
  .meta({ id: "IntrospectionResponse" });

/**
 * RFC 7662 for partners, authenticated with the partner key (Bearer, or the password of Basic):
 * the same judgement as `POST /api/verify`, told as introspection.
 */
export function introspectionEndpoint(
  ctx: IdentityContext,
  issuer: string,
  limits: { badKeysPerIp: RateLimiter },
) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/introspect",
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthIntrospect",
      summary: "Token introspection for partners (RFC 7662)",
      description:
        'Authenticated with the partner key, as `Authorization: Bearer <partner key>` or as the password of HTTP Basic. Every bad token is exactly `{"active":false}`.',
      tags: ["OAuth"],
      security: [{ partnerKey: [] }],
      responses: {
        "200": {
          description: "Active with its claims, or exactly {active:false}",
          content: { "application/json": { schema: IntrospectionResponse } },
        },
        "400": refusal("invalid_request"),
        "401": refusal("invalid_client: a missing, unknown or revoked partner key"),
        "429": refusal("temporarily_unavailable: too many unknown partner keys from this address"),
        ...COMMON_REFUSALS,
      },
    },
    admit(request) {
      const partnerKey = partnerKeyOf(request.header("authorization"));
      if (partnerKey) return { ok: true, admitted: partnerKey };
      const answer = oauthError("invalid_client", "Send the partner key", {
        "WWW-Authenticate": 'Bearer realm="agentpass", Basic realm="agentpass"',
      });
      return { ok: false, answer };
    },
    ...formInput(TokenForm),
    async handle(request, { admitted: partnerKey, body }) {
      const authorization = request.header("authorization");
      const result = await introspectSessionToken(ctx, partnerKey, body.token.slice(0, 1000));
      if (!result.ok) {
        const counted = await limits.badKeysPerIp.take(request.clientIp());
        if (!counted.ok) return tooManyRequests(counted, "Too many unknown partner keys");
        const description =
          result.code === "REVOKED_PARTNER_KEY"
            ? "Partner key has been revoked"
            : "Invalid partner key";
        // The challenge of the scheme the caller used (RFC 6750 section 3, RFC 7617).
        const basic = /^basic /i.test(authorization ?? "");
        return oauthError("invalid_client", description, {
          "WWW-Authenticate": basic
            ? 'Basic realm="agentpass"'
            : `Bearer realm="agentpass", error="invalid_token", error_description="${description}"`,
        });
      }
      if (!result.active) return { status: 200, body: { active: false }, headers: NO_STORE };
      return {
        status: 200,
        body: {
          active: true,
          email: result.email,
          sub: result.accountId,
          ...(result.audience && { aud: result.audience }),
          ...(result.clientId && { client_id: result.clientId }),
          iat: Math.floor(result.issuedAt / 1000),
          exp: Math.floor(result.expiresAt / 1000),
          iss: issuer,
          token_type: result.jkt ? "DPoP" : "Bearer",
          ...(result.jkt && { cnf: { jkt: result.jkt } }),
        },
        headers: NO_STORE,
      };
    },
  });
}

/** The partner key of `Authorization: Bearer <key>` or of Basic (its password). */
function partnerKeyOf(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const [scheme, value] = authorization.split(" ", 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === "bearer") return value.trim();
  if (scheme?.toLowerCase() !== "basic") return undefined;
  const decoded = Buffer.from(value, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon === -1) return undefined;
  // RFC 6749 section 2.3.1: the client id and secret are form-encoded before Basic.
  try {
    return decodeURIComponent(decoded.slice(colon + 1).replaceAll("+", " "));
  } catch {
    return undefined;
  }
}
