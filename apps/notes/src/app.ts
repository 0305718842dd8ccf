import { isDatabaseUnavailable } from "@agentpass/db";
import {
  apiDocsEndpoints,
  createApiListener,
  createServiceMetrics,
  defineEndpoint,
  type Endpoint,
  healthEndpoints,
  type Listener,
  type ServiceMetrics,
  type TrustProxy,
} from "@agentpass/http";
import type { Tracer } from "@opentelemetry/api";
import type { Logger } from "pino";
import { z } from "zod";
import type { NotesContext } from "./context.ts";
import { MAX_BODY_BYTES } from "./limits.ts";
import { MCP_UNSERVED, mcpEndpoint } from "./mcp/endpoint.ts";
import { agentExecuteEndpoint } from "./routes/agent-execute.ts";
import { boundTokenUser, verifiedUser } from "./routes/authenticate.ts";
import { createAuthenticationCounts } from "./routes/authentication-metrics.ts";
import { noteEndpoints } from "./routes/notes.ts";
import {
  protectedResourceEndpoints,
  RESOURCE_METADATA_PATH,
  RESOURCE_NAME,
  RESOURCE_PATHS,
} from "./routes/protected-resource.ts";
import { answerOfRefusal } from "./routes/refusals.ts";
import { tagEndpoints } from "./routes/tags.ts";

const AUTHENTICATION = {
  header: "x-session-token",
  example: 'curl -H "x-session-token: $(agentpass token)" <base_url>/api/notes',
  description:
    "Every notes and tags call carries a 5-minute AgentPass session token minted by `agentpass token`, in `x-session-token` or as `Authorization: Bearer` (RFC 6750); `/mcp` takes only a token minted for the notes API (`agentpass token --resource <its /mcp URL>`, or `--audience <notes partner id>`). A token bound to your key (`agentpass token --dpop`, RFC 9449) goes as `Authorization: DPoP` with a fresh `DPoP` proof of each request (`agentpass headers <METHOD> <URL>` prints both). A 401 means mint a fresh one (`agentpass token --fresh`) and retry. Every refusal is `{ error, code }`: `error` for people, `code` for programs.",
};

/** How the index tells each endpoint's credential, by its security scheme. */
const AUTH_BY_SCHEME: Record<string, string> = {
  // Authorization: Bearer takes the same token (`authentication.description` says so).
  sessionToken: "x-session-token: $(agentpass token)",
  boundToken: "Authorization: Bearer $(agentpass token --audience <notes partner id>)",
};

/**
 * The notes API: every endpoint defined once (schemas, refusals, handler), served by the one
 * API router and described by the generated OpenAPI document and the index at `GET /api`.
 * `agentpassUrl` is named as the authorization server of its protected resources (RFC 9728).
 * Every answer is counted in `metrics` (unset: series of its own), served at `/metrics`.
 */
export function createNotesApi(
  ctx: NotesContext,
  options: {
    logger: Logger;
    publicUrl: string;
    agentpassUrl: string;
    trustProxy?: TrustProxy;
    metrics?: ServiceMetrics;
    /** The service's tracer (`startTelemetry`): each request a server span. */
    tracer?: Tracer;
    /**
     * Why `/readyz` fails though the database answers (`shutting_down`, `partner_key_revoked`,
     * …); unset: never.
     */
    notReady?: () => string | null | Promise<string | null>;
  },
): { listener: Listener; endpoints: Endpoint[] } {
  const { publicUrl } = options;
  const metrics = options.metrics ?? createServiceMetrics();
  const counts = createAuthenticationCounts(metrics.registry);
  const { agentpassUrl } = options;
  const verified = verifiedUser(ctx, { publicUrl, path: RESOURCE_PATHS.api, agentpassUrl }, counts);
  const bound = boundTokenUser(ctx, { publicUrl, path: RESOURCE_PATHS.mcp, agentpassUrl }, counts);
  const api: Endpoint[] = [
    indexEndpoint(() => api),
    ...noteEndpoints(ctx, verified),
    ...tagEndpoints(ctx, verified),
    mcpEndpoint(ctx, { publicUrl, logger: options.logger, authenticate: bound }),
    agentExecuteEndpoint(ctx, agentpassUrl),
    ...protectedResourceEndpoints({ publicUrl, agentpassUrl: options.agentpassUrl }),
    ...healthEndpoints(() => ctx.store.ping(), options.notReady ?? (() => null)),
  ];
  const endpoints = [
    ...api,
    ...apiDocsEndpoints([...api, ...MCP_UNSERVED], {
      info: {
        title: RESOURCE_NAME,
        version: "0.1.0",
        description: AUTHENTICATION.description,
        license: { name: "MIT", identifier: "MIT" },
      },
      servers: [{ url: options.publicUrl }],
      tags: [
        { name: "About", description: "What this API offers and how to authenticate" },
        { name: "Notes", description: "The caller's notes: list, search, read, write" },
        { name: "Tags", description: "The caller's tags" },
        { name: "MCP", description: "The same notes and tags as an MCP server" },
        { name: "Agent Auth", description: "Capabilities agents execute here" },
        { name: "Metadata", description: "OAuth protected resource metadata (RFC 9728)" },
        { name: "Health", description: "Probes for an orchestrator" },
      ],
      components: {
        securitySchemes: {
          sessionToken: {
            type: "apiKey",
            in: "header",
            name: "x-session-token",
            description: "A session token: $(agentpass token)",
          },
          bearerToken: {
            type: "http",
            scheme: "bearer",
            description: `The same session token as \`Authorization: Bearer\` (RFC 6750), or an OAuth access token from AgentPass: this resource's metadata (RFC 9728) at \`${RESOURCE_METADATA_PATH}\` names AgentPass as its authorization server. A token bound to a key (DPoP, RFC 9449) goes as \`Authorization: DPoP\` instead, with a \`DPoP\` proof of the request.`,
          },
          agentJwt: {
            type: "http",
            scheme: "bearer",
            bearerFormat: "JWT",
            description:
              "An agent's own JWT (Agent Auth Protocol `agent+jwt`), for this API's URL, or for `/agent/execute` exactly there",
          },
          boundToken: {
            type: "oauth2",
            description: `An OAuth access token from AgentPass, bound to this resource (RFC 8707), sent as \`Authorization: Bearer\` (or, bound to the client's key, as \`Authorization: DPoP\` with a \`DPoP\` proof, RFC 9449): each resource's protected resource metadata (RFC 9728, \`${RESOURCE_METADATA_PATH}\` and \`${RESOURCE_METADATA_PATH}${RESOURCE_PATHS.mcp}\`) names AgentPass as its authorization server. \`agentpass token --resource <its URL>\` (or \`--audience <notes partner id>\`) mints one too.`,
            flows: {
              authorizationCode: {
                authorizationUrl: `${options.agentpassUrl}/oauth/authorize`,
                tokenUrl: `${options.agentpassUrl}/oauth/token`,
                refreshUrl: `${options.agentpassUrl}/oauth/token`,
                scopes: {},
              },
            },
          },
        },
      },
    }),
  ];
  const listener = createApiListener(endpoints, {
    logger: options.logger,
    maxBodyBytes: MAX_BODY_BYTES,
    trustProxy: options.trustProxy ?? "none",
    isUnavailable: isDatabaseUnavailable,
    mapError: answerOfRefusal,
    metrics,
    ...(options.tracer && { tracer: options.tracer }),
  });
  return { listener, endpoints };
}

/** GET /api: the index an agent reads first, from the endpoints' own definitions. */
function indexEndpoint(api: () => Endpoint[]): Endpoint {
  return defineEndpoint({
    method: "GET",
    path: "/api",
    public: true,
    operation: {
      operationId: "apiIndex",
      description:
        "Public: every endpoint of this API with its method and summary, and how to authenticate: what an agent reads first.",
      tags: ["About"],
      summary: "This index: every endpoint and how to authenticate",
      security: [],
      responses: {
        "200": {
          description: "The index",
          content: {
            "application/json": {
              schema: z.object({
                name: z.string(),
                authentication: z.object({
                  header: z.string(),
                  example: z.string(),
                  description: z.string(),
                }),
                endpoints: z.array(
                  z.object({
                    method: z.string(),
                    path: z.string(),
                    description: z.string(),
                    auth: z.string(),
                  }),
                ),
                openapi: z.string(),
                docs: z.string(),
              }),
            },
          },
        },
      },
    },
    handle: () => ({
      status: 200,
      body: {
        name: RESOURCE_NAME,
        authentication: AUTHENTICATION,
        endpoints: api()
          .filter((endpoint) => /^\/(api|mcp|\.well-known)\b/.test(endpoint.path))
          .map((endpoint) => ({
            method: endpoint.method,
            path: endpoint.path.replace(/\{(\w+)\}/g, ":$1"),
            description: endpoint.operation.summary ?? "",
            auth: authOf(endpoint),
          })),
        openapi: "/api/openapi.json",
        docs: "/docs",
      },
    }),
  });
}

function authOf(endpoint: Endpoint): string {
  const scheme = Object.keys(endpoint.operation.security?.[0] ?? {})[0];
  return scheme === undefined ? "none" : (AUTH_BY_SCHEME[scheme] ?? scheme);
}
