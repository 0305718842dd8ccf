import { z } from "zod";
import {
  createDocument,
  type ZodOpenApiObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
} from "zod-openapi";
import type { Endpoint, EndpointInput } from "./endpoint.ts";
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

/** Refusals any endpoint may give: a fault, an unreachable database. */
const IMPLIED: readonly ErrorDef[] = [COMMON_ERRORS.internal_error, COMMON_ERRORS.unavailable];

/**
 * What a 400 may carry beside `{ error, code }`: which parts of a refused body or query were
 * wrong, as zod flattens a failed parse. Declared on every 400, so a client generated from the
 * document reads it wherever a service sends it.
 */
const ValidationDetails = z
  .object({
    formErrors: z.array(z.string()).meta({ description: "What is wrong with the whole input" }),
    fieldErrors: z
      .record(z.string(), z.array(z.string()))
      .meta({ description: "What is wrong with each field, by name" }),
  })
  .meta({ id: "ValidationDetails", description: "Why the body or query was refused" });

/**
 * A route as the document describes it: an `Endpoint`, or a route that is none but that clients
 * must still know of (a page such as an OAuth authorization endpoint, a method the router refuses
 * with 405 that a protocol tells clients to try). Such a route is described here only: the
 * contract test holds it to its live answers.
 */
export type DocumentedRoute = Pick<Endpoint, "method" | "path" | "errors" | "input"> & {
  /** A page's parameters are documented here by hand; an endpoint's come from its `input`. */
  operation: ZodOpenApiOperationObject;
  undocumented?: boolean;
};

/**
 * The OpenAPI 3.1 document of a service, generated from its endpoint definitions: each
 * operation's own parameters, body and success answers, and every refusal of its error table
 * grouped by status, with the machine codes it may carry and an example of each. A status both
 * the error table and the operation document answers either; the operation's own answer
 * replaces what is only implied (an endpoint that renders every refusal in its own format).
 */
export function buildOpenApiDocument(
  endpoints: readonly DocumentedRoute[],
  document: Omit<ZodOpenApiObject, "openapi" | "paths">,
): Record<string, unknown> {
  const paths: ZodOpenApiPathsObject = {};
  for (const endpoint of endpoints) {
    if (endpoint.undocumented) continue;
    const own = endpoint.errors ?? [];
    const implied = [...IMPLIED];
    // The router answers 404 for a path segment it cannot percent-decode, before the handler.
    if (endpoint.path.includes("{")) implied.push(COMMON_ERRORS.not_found);
    const responses: Record<string, unknown> = errorResponses([...own, ...implied]);
    const ownStatuses = new Set(own.map((error) => String(error.status)));
    for (const [status, response] of Object.entries(endpoint.operation.responses ?? {})) {
      const refusal = responses[status] as ZodOpenApiResponseObject | undefined;
      responses[status] =
        refusal && ownStatuses.has(status)
          ? eitherOf(refusal, response as ZodOpenApiResponseObject)
          : response;
    }
    paths[endpoint.path] ??= {};
    (paths[endpoint.path] as Record<string, unknown>)[endpoint.method.toLowerCase()] = {
      ...endpoint.operation,
      ...(endpoint.input && documentedInput(endpoint.input)),
      responses,
    };
  }
  return createDocument({ openapi: "3.1.0", ...document, paths }) as unknown as Record<
    string,
    unknown
  >;
}

const MEDIA_TYPES = {
  json: ["application/json"],
  form: ["application/x-www-form-urlencoded"],
  "json or form": ["application/json", "application/x-www-form-urlencoded"],
};

/** The operation's parameters and body: the schemas the router parses requests with. */
function documentedInput(input: EndpointInput): Partial<ZodOpenApiOperationObject> {
  const operation: Partial<ZodOpenApiOperationObject> = {};
  if (input.params || input.query) {
    operation.requestParams = {
      ...(input.params && { path: input.params }),
      ...(input.query && { query: input.query }),
    } as ZodOpenApiOperationObject["requestParams"];
  }
  const schema = input.body;
  if (schema) {
    operation.requestBody = {
      required: input.bodyRequired ?? true,
      content: Object.fromEntries(
        MEDIA_TYPES[input.encoding ?? "json"].map((type) => [type, { schema }]),
      ),
    };
  }
  return operation;
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
      ...(status === 400 ? { details: ValidationDetails.optional() } : {}),
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

/**
 * A status answered two ways: one of the error table's refusals, or the operation's own answer
 * (a protocol's error format, say). Each media type's schema is either one; descriptions and
 * headers of both are kept.
 */
function eitherOf(
  refusal: ZodOpenApiResponseObject,
  own: ZodOpenApiResponseObject,
): ZodOpenApiResponseObject {
  const content: NonNullable<ZodOpenApiResponseObject["content"]> = { ...refusal.content };
  for (const [type, media] of Object.entries(own.content ?? {})) {
    if (!media) continue;
    const table = content[type]?.schema;
    content[type] =
      table instanceof z.ZodType && media.schema instanceof z.ZodType
        ? { ...media, schema: z.union([table, media.schema]) }
        : media;
  }
  return {
    ...own,
    description: `${own.description} | ${refusal.description}`,
    headers: { ...refusal.headers, ...own.headers },
    content,
  };
}
