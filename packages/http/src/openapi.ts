import { z } from "zod";
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from "zod-openapi";
import type { Endpoint } from "./endpoint.ts";
import { COMMON_ERRORS, type ErrorDef } from "./http-error.ts";

const integer = (description: string) => ({ description, schema: { type: "integer" as const } });

/** The IETF httpapi draft's fields, on every answer a rate limit counted. */
export const RATE_LIMIT_HEADERS = {
  "RateLimit-Limit": integer("Requests allowed in the window"),
  "RateLimit-Remaining": integer("Requests left in the window"),
  "RateLimit-Reset": integer("Seconds until the window ends"),
};

const RETRY_AFTER = { "Retry-After": integer("Seconds to wait before trying again") };

/** Headers every refusal of a status carries, beside its body. */
const HEADERS_BY_STATUS: Record<number, ZodOpenApiResponseObject["headers"]> = {
  401: {
    "WWW-Authenticate": {
      description: "The credential the endpoint takes (RFC 9110)",
      schema: { type: "string" },
    },
  },
  405: { Allow: { description: "The methods the path takes", schema: { type: "string" } } },
  429: { ...RATE_LIMIT_HEADERS, ...RETRY_AFTER },
  503: RETRY_AFTER,
};

/** Refusals any endpoint may give: a body over the limit, a fault, an unreachable database. */
const IMPLIED: readonly ErrorDef[] = [COMMON_ERRORS.internal_error, COMMON_ERRORS.unavailable];

/**
 * The OpenAPI 3.1 document of a service, generated from its endpoint definitions: each
 * operation's own parameters, body and success answers, and every refusal of its error table
 * grouped by status, with the machine codes it may carry and an example of each.
 */
export function buildOpenApiDocument(
  endpoints: readonly Endpoint[],
  document: Omit<ZodOpenApiObject, "openapi" | "paths">,
): Record<string, unknown> {
  const paths: ZodOpenApiPathsObject = {};
  for (const endpoint of endpoints) {
    if (endpoint.undocumented) continue;
    const errors = [...(endpoint.errors ?? []), ...IMPLIED];
    const responses = { ...errorResponses(errors), ...endpoint.operation.responses };
    paths[endpoint.path] ??= {};
    (paths[endpoint.path] as Record<string, unknown>)[endpoint.method.toLowerCase()] = {
      ...endpoint.operation,
      responses,
    };
  }
  return createDocument({ openapi: "3.1.0", ...document, paths }) as unknown as Record<
    string,
    unknown
  >;
}

function errorResponses(errors: readonly ErrorDef[]): Record<string, ZodOpenApiResponseObject> {
  const byStatus = new Map<number, ErrorDef[]>();
  for (const error of errors) {
    const group = byStatus.get(error.status) ?? [];
    if (!group.some((known) => known.code === error.code)) group.push(error);
    byStatus.set(error.status, group);
  }
  const responses: Record<string, ZodOpenApiResponseObject> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = group.map((error) => error.code) as [string, ...string[]];
    const schema = z.object({
      error: z.string().meta({ description: "What went wrong, for people" }),
      code: z.enum(codes).meta({ description: "What went wrong, for programs: stable" }),
      ...(status === 500
        ? { requestId: z.string().meta({ description: "Names the failure in the logs" }) }
        : {}),
    });
    responses[String(status)] = {
      description: group.map((error) => error.message).join(" | "),
      ...(HEADERS_BY_STATUS[status] ? { headers: HEADERS_BY_STATUS[status] } : {}),
      content: {
        "application/json": {
          schema,
          examples: Object.fromEntries(
            group.map((error) => [
              error.code,
              {
                value: {
                  error: error.message,
                  code: error.code,
                  ...(status === 500 ? { requestId: "5f0c…" } : {}),
                },
              },
            ]),
          ),
        },
      },
    };
  }
  return responses;
}
