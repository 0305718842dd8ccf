import { type ZodType, z } from "zod";
import {
  DeviceCodeRequest,
  DeviceCodeResponse,
  DeviceTokenRequest,
  DeviceTokenResponse,
} from "./routes/device.ts";
import { DirectoryResponse } from "./routes/directory.ts";
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

const integerHeader = (description: string) => ({ description, schema: { type: "integer" } });

/** The IETF httpapi draft's fields, on every answer a rate limit counted. */
const RATE_LIMIT_HEADERS = {
  "RateLimit-Limit": integerHeader("Requests allowed in the window"),
  "RateLimit-Remaining": integerHeader("Requests left in the window"),
  "RateLimit-Reset": integerHeader("Seconds until the window ends"),
};

function tooMany(description: string) {
  return {
    ...json(`${description}. The body is { "error": "Too many requests" }.`),
    headers: {
      ...RATE_LIMIT_HEADERS,
      "Retry-After": integerHeader("Seconds to wait before trying again"),
    },
  };
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
            "429": tooMany(
              "Too many requests: this partner key's failed verifications (FAILED_VERIFIES_PER_MINUTE), or this client's unknown or revoked keys (BAD_KEYS_PER_MINUTE), are over the limit",
            ),
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
            "201": { ...json("A new session token", MintResponse), headers: RATE_LIMIT_HEADERS },
            "400": json("Invalid JSON body | Invalid audience"),
            "401": json("Missing or invalid user key | Missing user key | Invalid user key"),
            "403": json("User key has been revoked"),
            "413": json("Request body too large"),
            "429": tooMany(
              "Too many requests: this user key minted MINTS_PER_MINUTE tokens this minute, or this client sent BAD_KEYS_PER_MINUTE unknown or revoked keys",
            ),
          },
        },
      },
      "/api/partners": {
        get: {
          operationId: "listPartners",
          summary: "The public partner directory: partners that chose to be listed",
          security: [],
          responses: { "200": json("Listed partners, by name", DirectoryResponse) },
        },
      },
      "/api/device/code": {
        post: {
          operationId: "startDeviceLogin",
          summary: "Start a browser login for a CLI (RFC 8628 device authorization request)",
          security: [],
          requestBody: {
            required: false,
            content: {
              "application/json": { schema: schema(DeviceCodeRequest) },
              "application/x-www-form-urlencoded": { schema: schema(DeviceCodeRequest) },
            },
          },
          responses: {
            "200": json(
              "Show user_code and verification_uri to the person; poll with device_code",
              DeviceCodeResponse,
            ),
            "400": json("Invalid request body"),
            "429": json("Too many requests (Retry-After says when to come back)"),
          },
        },
      },
      "/api/device/token": {
        post: {
          operationId: "pollDeviceLogin",
          summary:
            "Poll a browser login; once approved, answers a new user key once (RFC 8628 section 3.4)",
          security: [],
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: schema(DeviceTokenRequest) },
              "application/x-www-form-urlencoded": { schema: schema(DeviceTokenRequest) },
            },
          },
          responses: {
            "200": json("Approved: the new user key", DeviceTokenResponse),
            "400": {
              description:
                "error is authorization_pending | slow_down | access_denied | expired_token | invalid_grant | invalid_request, with error_description",
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    properties: {
                      error: { type: "string" },
                      error_description: { type: "string" },
                    },
                  },
                },
              },
            },
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
