import { defineEndpoint } from "@agentpass/http";
import { z } from "zod";
import { DPOP_ALGORITHMS } from "../../../infra/dpop-proofs.ts";
import { DEVICE_CODE_GRANT } from "./token.ts";

const Metadata = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    device_authorization_endpoint: z.string(),
    introspection_endpoint: z.string(),
    revocation_endpoint: z.string(),
    registration_endpoint: z.string(),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    scopes_supported: z
      .array(z.string())
      .optional()
      .meta({ description: "Omitted: AgentPass defines no scopes (RFC 8414 omits empty claims)" }),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    client_id_metadata_document_supported: z.boolean(),
    authorization_response_iss_parameter_supported: z.boolean(),
    dpop_signing_alg_values_supported: z.array(z.string()),
    service_documentation: z.string(),
  })
  .meta({ id: "AuthorizationServerMetadata" });

/** RFC 8414: everything a stock client needs, from the issuer URL alone. */
export function metadataEndpoint(issuer: string) {
  const metadata: z.infer<typeof Metadata> = {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    registration_endpoint: `${issuer}/oauth/register`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token", DEVICE_CODE_GRANT],
    code_challenge_methods_supported: ["S256"],
    // No scopes: a grant lets its client act as the person, toward one partner or any. So no
    // `scopes_supported`: RFC 8414 section 2 omits a claim with zero elements.
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    // The partner key as the client secret, by either registered method. A partner key as a
    // Bearer token is taken too, but "bearer" is no registered method, so it is not listed.
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
    service_documentation: `${issuer}/docs`,
  };
  return defineEndpoint({
    method: "GET",
    path: "/.well-known/oauth-authorization-server",
    public: true,
    operation: {
      operationId: "oauthMetadata",
      description:
        "Public: the issuer, every endpoint, the grant types, PKCE (S256), DPoP algorithms and client authentication methods, as RFC 8414 names them; claims with no value are omitted.",
      security: [],
      summary: "OAuth 2.0 authorization server metadata (RFC 8414)",
      tags: ["OAuth"],
      responses: {
        "200": {
          description: "The metadata",
          content: { "application/json": { schema: Metadata } },
        },
      },
    },
    handle: () => ({
      status: 200,
      body: metadata,
      headers: { "Cache-Control": "public, max-age=300" },
    }),
  });
}
