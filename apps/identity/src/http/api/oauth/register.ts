import { defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../../context.ts";
import { MAX_CLIENT_NAME_LENGTH, registerClient } from "../../../domain/oauth.ts";
import type { RateLimiter } from "../../../infra/rate-limit.ts";
import {
  COMMON_REFUSALS,
  MAX_FORM_BYTES,
  NO_STORE,
  oauthError,
  refusal,
  renderOAuthError,
  tooManyRequests,
} from "./wire.ts";

/** The metadata a public client registers with; other RFC 7591 fields are accepted and ignored. */
const RegistrationRequest = z.looseObject({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(10),
  client_name: z.string().max(MAX_CLIENT_NAME_LENGTH).optional(),
  token_endpoint_auth_method: z.literal("none").optional(),
});

const RegistrationResponse = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.number().int(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.literal("none"),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
  })
  .meta({ id: "ClientRegistration" });

/** RFC 7591 dynamic registration of a public client. */
export function registrationEndpoint(
  ctx: IdentityContext,
  limits: { registrationsPerIp: RateLimiter },
) {
  return defineEndpoint({
    method: "POST",
    path: "/oauth/register",
    public: true,
    maxBodyBytes: MAX_FORM_BYTES,
    renderError: renderOAuthError,
    operation: {
      operationId: "oauthRegister",
      description:
        "JSON client metadata; public clients only (`token_endpoint_auth_method` `none`), with https redirect URIs or loopback ones for native apps. A client no code was issued to is deleted a day on.",
      security: [],
      summary: "Register a public client (RFC 7591)",
      tags: ["OAuth"],
      responses: {
        "201": {
          description: "The client's id and its registered metadata",
          content: { "application/json": { schema: RegistrationResponse } },
        },
        "400": refusal("invalid_redirect_uri or invalid_client_metadata"),
        "429": refusal("temporarily_unavailable: too many clients registered from this address"),
        ...COMMON_REFUSALS,
      },
    },
    async admit(request) {
      const counted = await limits.registrationsPerIp.take(request.clientIp());
      if (counted.ok) return { ok: true, admitted: undefined };
      return {
        ok: false,
        answer: tooManyRequests(counted, "Too many clients registered from this address"),
      };
    },
    input: { body: RegistrationRequest },
    refuseInput(failure) {
      const field = failure.problem === "schema" ? failure.error.issues[0]?.path[0] : undefined;
      return field === "redirect_uris"
        ? oauthError("invalid_redirect_uri", "redirect_uris must be 1 to 10 URIs")
        : oauthError(
            "invalid_client_metadata",
            typeof field === "string" ? `Invalid ${field}` : "Send the client's metadata as JSON",
          );
    },
    async handle(_request, { body }) {
      const result = await registerClient(ctx, body);
      if (!result.ok) return oauthError(result.error, result.description);
      return {
        status: 201,
        body: {
          client_id: result.client.clientId,
          client_id_issued_at: Math.floor(result.issuedAt / 1000),
          client_name: result.client.clientName,
          redirect_uris: result.client.redirectUris,
          token_endpoint_auth_method: "none",
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
        },
        headers: NO_STORE,
      };
    },
  });
}
