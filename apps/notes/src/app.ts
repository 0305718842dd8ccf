import { isDatabaseUnavailable } from "@agentpass/db";
import {
  apiDocsEndpoints,
  createApiListener,
  defineEndpoint,
  type Endpoint,
  type Listener,
  type TrustProxy,
} from "@agentpass/http";
import { sql } from "kysely";
import type { Logger } from "pino";
import { z } from "zod";
import type { NotesContext } from "./context.ts";
import { MAX_BODY_BYTES } from "./limits.ts";
import { noteEndpoints } from "./routes/notes.ts";
import { answerOfRefusal } from "./routes/refusals.ts";
import { tagEndpoints } from "./routes/tags.ts";

export const AUTHENTICATION = {
  header: "x-session-token",
  example: 'curl -H "x-session-token: $(agentpass token)" <base_url>/api/notes',
  description:
    "Every notes and tags call carries a 5-minute AgentPass session token minted by `agentpass token`. A 401 means mint a fresh one (`agentpass token --fresh`) and retry. Every refusal is `{ error, code }`: `error` for people, `code` for programs.",
};

/**
 * The notes API: every endpoint defined once (schemas, refusals, handler), served by the one
 * API router and described by the generated OpenAPI document and the index at `GET /api`.
 */
export function createNotesApi(
  ctx: NotesContext,
  options: { logger: Logger; publicUrl: string; trustProxy?: TrustProxy },
): { listener: Listener; endpoints: Endpoint[] } {
  const api: Endpoint[] = [
    indexEndpoint(() => api),
    ...noteEndpoints(ctx),
    ...tagEndpoints(ctx),
    ...healthEndpoints(ctx),
  ];
  const endpoints = [
    ...api,
    ...apiDocsEndpoints(api, {
      info: {
        title: "AgentPass reference notes API",
        version: "0.1.0",
        description: AUTHENTICATION.description,
        license: { name: "MIT", identifier: "MIT" },
      },
      servers: [{ url: options.publicUrl }],
      components: {
        securitySchemes: {
          sessionToken: {
            type: "apiKey",
            in: "header",
            name: "x-session-token",
            description: "A session token: $(agentpass token)",
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
        name: "AgentPass reference notes API",
        authentication: AUTHENTICATION,
        endpoints: api()
          .filter((endpoint) => endpoint.path.startsWith("/api"))
          .map((endpoint) => ({
            method: endpoint.method,
            path: endpoint.path.replace(/\{(\w+)\}/g, ":$1"),
            description: endpoint.operation.summary ?? "",
            auth: endpoint.operation.security?.length
              ? "x-session-token: $(agentpass token)"
              : "none",
          })),
        openapi: "/api/openapi.json",
        docs: "/docs",
      },
    }),
  });
}

/** Liveness (the process answers) and readiness (its database answers too). */
function healthEndpoints(ctx: NotesContext): Endpoint[] {
  return [
    defineEndpoint({
      method: "GET",
      path: "/healthz",
      operation: {
        operationId: "liveness",
        summary: "Liveness: the process answers",
        security: [],
        responses: {
          "200": {
            description: "Up",
            content: { "application/json": { schema: z.object({ ok: z.boolean() }) } },
          },
        },
      },
      handle: () => ({ status: 200, body: { ok: true } }),
    }),
    defineEndpoint({
      method: "GET",
      path: "/readyz",
      operation: {
        operationId: "readiness",
        summary: "Readiness: the database answers",
        security: [],
        responses: {
          "200": {
            description: "Ready",
            content: {
              "application/json": {
                schema: z.object({ ok: z.boolean(), database: z.boolean() }),
              },
            },
          },
        },
      },
      async handle() {
        try {
          await sql`SELECT 1`.execute(ctx.store.db);
          return { status: 200, body: { ok: true, database: true } };
        } catch {
          return {
            status: 503,
            body: { ok: false, database: false },
            headers: { "Retry-After": "5" },
          };
        }
      },
    }),
  ];
}
