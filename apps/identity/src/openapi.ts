import { type ZodType, z } from "zod";
import { MintRequest, MintResponse } from "./routes/session-tokens.ts";
import { VerifyRequest, VerifyResponse } from "./routes/verify.ts";

const ErrorResponse = z.object({ error: z.string().describe("Human-readable failure message") });

function schema(type: ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(type, { io: "input" }) as Record<string, unknown>;
  return rest;
}

function json(description: string, type: ZodType = ErrorResponse) {
  return { description, content: { "application/json": { schema: schema(type) } } };
}

/** The OpenAPI 3.1 document of the identity service, built from the routes' own schemas. */
export function buildOpenApiDocument(publicUrl: string) {
  return {
    openapi: "3.1.0",
    info: {
      title: "AgentPass identity service",
      version: "0.1.0",
      description:
        "Agents trade a user key for a 5-minute session token; partners verify the token and learn the person's email.",
    },
    servers: [{ url: publicUrl }],
    components: {
      securitySchemes: {
        partnerKey: { type: "http", scheme: "bearer", description: "A partner key (apk_…)" },
        userKey: { type: "http", scheme: "bearer", description: "A user key (apu_…)" },
      },
    },
    paths: {
      "/api/verify": {
        post: {
          operationId: "verifySessionToken",
          summary: "Turn a session token into the verified email of the person who minted it",
          security: [{ partnerKey: [] }],
          requestBody: {
            required: true,
            content: { "application/json": { schema: schema(VerifyRequest) } },
          },
          responses: {
            "200": {
              ...json("The token is valid", VerifyResponse),
              headers: {
                "AgentPass-Token-Expires-At": {
                  description: "When the token expires (ISO 8601); a partner may cache until then",
                  schema: { type: "string", format: "date-time" },
                },
              },
            },
            "400": json("Invalid JSON body | Missing or invalid sessionToken"),
            "401": json(
              "Missing or invalid partner key | Missing partner key | Invalid partner key | Invalid or expired session token",
            ),
            "403": json("Partner key has been revoked"),
            "413": json("Request body too large"),
            "500": json("Internal server error (with a requestId)"),
          },
        },
      },
      "/api/session-tokens": {
        post: {
          operationId: "mintSessionToken",
          summary: "Trade a user key for a session token (the agent CLI does this)",
          security: [{ userKey: [] }],
          requestBody: {
            required: false,
            content: { "application/json": { schema: schema(MintRequest) } },
          },
          responses: {
            "201": json("A new session token", MintResponse),
            "400": json("Invalid JSON body | Invalid audience"),
            "401": json("Missing or invalid user key | Missing user key | Invalid user key"),
            "403": json("User key has been revoked"),
            "413": json("Request body too large"),
          },
        },
      },
      "/healthz": { get: { summary: "Liveness", responses: { "200": { description: "Up" } } } },
      "/readyz": {
        get: {
          summary: "Readiness: the database answers",
          responses: { "200": { description: "Ready" }, "503": { description: "Not ready" } },
        },
      },
    },
  };
}
