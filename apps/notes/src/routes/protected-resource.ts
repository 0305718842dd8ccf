import { defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";

/** Where RFC 9728 puts a resource's metadata, the resource's own path appended. */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/** The two protected resources: the REST API at the root, and the MCP server at `/mcp`. */
export const RESOURCE_PATHS = { api: "", mcp: "/mcp" } as const;

export const RESOURCE_NAME = "AgentPass reference notes API";

/**
 * The DPoP proof algorithms AgentPass accepts (its `DPOP_ALGORITHMS`, which its authorization
 * server metadata lists too): AgentPass checks the proofs sent here, so these are ours.
 */
const DPOP_ALGORITHMS = ["ES256", "EdDSA", "Ed25519", "ES384", "PS256", "RS256"];

const ResourceMetadata = z.object({
  resource: z.url().meta({ description: "The protected resource's identifier (its URL)" }),
  authorization_servers: z.array(z.url()).meta({ description: "Where its tokens come from" }),
  bearer_methods_supported: z.array(z.literal("header")),
  resource_name: z.string(),
  resource_documentation: z.url(),
  dpop_signing_alg_values_supported: z
    .array(z.string())
    .meta({ description: "The algorithms of the DPoP proofs (RFC 9449) sent with bound tokens" }),
  dpop_bound_access_tokens_required: z
    .boolean()
    .meta({ description: "Whether every token must be bound to a key: no, Bearer ones are taken" }),
});

/** The URL of a protected resource's metadata document, as 401 challenges name it. */
export function resourceMetadataUrl(publicUrl: string, resourcePath: string): string {
  return `${publicUrl}${RESOURCE_METADATA_PATH}${resourcePath}`;
}

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of the REST API and of `/mcp`: public, any
 * origin may read them. An OAuth client that meets a 401 reads the document its challenge names
 * and learns that AgentPass issues the tokens, and that a token bound to its key (DPoP, RFC 9449
 * section 5.1) is taken beside Bearer ones.
 */
export function protectedResourceEndpoints(options: {
  publicUrl: string;
  agentpassUrl: string;
}): Endpoint[] {
  const resources = [
    { path: RESOURCE_PATHS.api, name: RESOURCE_NAME, operationId: "apiResourceMetadata" },
    {
      path: RESOURCE_PATHS.mcp,
      name: `${RESOURCE_NAME} (MCP)`,
      operationId: "mcpResourceMetadata",
    },
  ];
  return resources.map(({ path, name, operationId }) => {
    const document = {
      resource: `${options.publicUrl}${path}`,
      authorization_servers: [options.agentpassUrl],
      bearer_methods_supported: ["header"],
      resource_name: name,
      resource_documentation: `${options.publicUrl}/docs`,
      dpop_signing_alg_values_supported: DPOP_ALGORITHMS,
      dpop_bound_access_tokens_required: false,
    };
    return defineEndpoint({
      method: "GET",
      path: `${RESOURCE_METADATA_PATH}${path}`,
      public: true,
      operation: {
        operationId,
        summary: `OAuth protected resource metadata (RFC 9728) of ${path || "the REST API"}`,
        description:
          "Public: the resource's URL, AgentPass as its authorization server, and the DPoP algorithms it takes; what an OAuth or MCP client reads after a 401 names it.",
        tags: ["Metadata"],
        security: [],
        responses: {
          "200": {
            description: "The resource's metadata",
            content: { "application/json": { schema: ResourceMetadata } },
          },
        },
      },
      handle: () => ({
        status: 200,
        body: document,
        headers: { "Cache-Control": "public, max-age=3600" },
      }),
    });
  });
}
