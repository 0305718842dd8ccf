import { defineEndpoint } from "@agentpass/http";
import type { IdentityContext } from "../../../context.ts";
import { revokeByRefreshToken } from "../../../domain/grants.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import { clientOf } from "../../web/audit.ts";
import { recordTokenRevoked } from "./grant-audit.ts";
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

/** RFC 7009: any refresh token of a grant revokes the grant, every token of it, in one write. */
export function revocationEndpoint(
  ctx: IdentityContext,
  limits: { revocationsPerIp: RateLimiter },
) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/revoke",
    public: true,
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthRevoke",
      description:
        "A form with `token` (a refresh token of the grant): the grant ends, and every token it minted stops on the next request, on every instance. An unknown token is answered 200, as RFC 7009 asks.",
      security: [],
      summary: "Revoke a grant by any of its refresh tokens, and every token it made (RFC 7009)",
      tags: ["OAuth"],
      responses: {
        "200": {
          description:
            "Revoked, or the token was not valid (RFC 7009 section 2.2); the body is empty",
        },
        "400": refusal("invalid_request, or unsupported_token_type for an access token"),
        "429": refusal("temporarily_unavailable: too many revocations from this address"),
        ...COMMON_REFUSALS,
      },
    },
    async admit(request) {
      const counted = await limits.revocationsPerIp.take(request.clientIp());
      if (counted.ok) return { ok: true, admitted: undefined };
      return {
        ok: false,
        answer: tooManyRequests(counted, "Too many revocations from this address"),
      };
    },
    ...formInput(TokenForm),
    async handle(request, { body }) {
      const revocation = await revokeByRefreshToken(ctx, body.token.slice(0, 1000));
      if (!revocation.ok && revocation.code === "access_token") {
        return oauthError(
          "unsupported_token_type",
          "Access tokens live 5 minutes and are not revoked one by one: revoke the refresh token",
        );
      }
      // A token that ended nothing (unknown, or revoked already) is answered 200 and recorded not.
      if (revocation.ok) await recordTokenRevoked(ctx, clientOf(request), revocation.revoked);
      return { status: 200, headers: NO_STORE };
    },
  });
}
