import { type ZodType, z } from "zod";
import {
  ErrorSchema,
  NoteCreate,
  NoteListQuery,
  NotePatch,
  NoteSchema,
  TagInput,
  TagSchema,
} from "./schemas.ts";

interface Endpoint {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  description: string;
  authenticated: boolean;
  query?: ZodType;
  body?: ZodType;
  success: [status: string, description: string, schema?: ZodType];
  errors: Record<string, string>;
}

const AUTH_ERRORS = {
  "401": "Missing session token | Invalid or expired session token | No account for this user",
  "503": "Identity service unavailable (AgentPass cannot be reached; retry after Retry-After)",
};
const NOTE_ID_ERRORS = { "400": "Invalid note id", "404": "Note not found" };
const BODY_ERRORS = "Request body must be valid JSON | Invalid request body (with details)";
const LIMIT_ERRORS =
  "Note limit reached (<n> notes) | Text limit reached (<n> bytes): the per-user caps (an update is refused only when it grows the note)";
const one = (key: string, schema: ZodType) => z.object({ [key]: schema });

/** Every endpoint of the notes API: the source of GET /api, the OpenAPI document and /docs. */
export const ENDPOINTS: Endpoint[] = [
  {
    method: "GET",
    path: "/api",
    description: "This index: every endpoint and how to authenticate",
    authenticated: false,
    success: ["200", "The index"],
    errors: {},
  },
  {
    method: "GET",
    path: "/api/notes",
    description: "List your notes, newest-updated first; search, filter by tag, paginate",
    authenticated: true,
    query: NoteListQuery,
    success: [
      "200",
      "A page of notes and the total matching",
      z.object({ notes: z.array(NoteSchema), total: z.number().int() }),
    ],
    errors: {
      "400":
        "Invalid query parameters (with details; a search of too many, too short or too long terms too)",
      ...AUTH_ERRORS,
      "503": `${AUTH_ERRORS["503"]} | Search took too long (a search statement ran past its budget; retry after Retry-After, or narrow the search)`,
    },
  },
  {
    method: "GET",
    path: "/api/notes/{id}",
    description: "Fetch one of your notes",
    authenticated: true,
    success: ["200", "The note", one("note", NoteSchema)],
    errors: { ...NOTE_ID_ERRORS, ...AUTH_ERRORS },
  },
  {
    method: "POST",
    path: "/api/notes",
    description: "Create a note",
    authenticated: true,
    body: NoteCreate,
    success: ["201", "The new note", one("note", NoteSchema)],
    errors: {
      "400": BODY_ERRORS,
      "409": LIMIT_ERRORS,
      "413": "Request body too large",
      ...AUTH_ERRORS,
    },
  },
  {
    method: "PATCH",
    path: "/api/notes/{id}",
    description:
      "Update a note: any subset of title, content, contentText, tagIds (replaces the set)",
    authenticated: true,
    body: NotePatch,
    success: ["200", "The updated note", one("note", NoteSchema)],
    errors: {
      ...NOTE_ID_ERRORS,
      "400": `Invalid note id | ${BODY_ERRORS}`,
      "409": LIMIT_ERRORS,
      "413": "Request body too large",
      ...AUTH_ERRORS,
    },
  },
  {
    method: "DELETE",
    path: "/api/notes/{id}",
    description: "Delete a note",
    authenticated: true,
    success: ["204", "Deleted"],
    errors: { ...NOTE_ID_ERRORS, ...AUTH_ERRORS },
  },
  {
    method: "GET",
    path: "/api/tags",
    description: "List your tags by name",
    authenticated: true,
    success: ["200", "Your tags", z.object({ tags: z.array(TagSchema) })],
    errors: AUTH_ERRORS,
  },
  {
    method: "POST",
    path: "/api/tags",
    description: "Create a tag (names are unique per user, ignoring case)",
    authenticated: true,
    body: TagInput,
    success: ["201", "The new tag", one("tag", TagSchema)],
    errors: { "400": BODY_ERRORS, "409": "Tag already exists", ...AUTH_ERRORS },
  },
  {
    method: "PATCH",
    path: "/api/tags/{id}",
    description: "Rename a tag",
    authenticated: true,
    body: TagInput,
    success: ["200", "The renamed tag", one("tag", TagSchema)],
    errors: {
      "400": `Invalid tag id | ${BODY_ERRORS}`,
      "404": "Tag not found",
      "409": "Tag already exists",
      ...AUTH_ERRORS,
    },
  },
  {
    method: "DELETE",
    path: "/api/tags/{id}",
    description: "Delete a tag (it is removed from every note)",
    authenticated: true,
    success: ["204", "Deleted"],
    errors: { "400": "Invalid tag id", "404": "Tag not found", ...AUTH_ERRORS },
  },
];

export const AUTHENTICATION = {
  header: "x-session-token",
  example: 'curl -H "x-session-token: $(agentpass token)" <base_url>/api/notes',
  description:
    "Every notes and tags call carries a 5-minute AgentPass session token minted by `agentpass token`. A 401 means mint a fresh one (`agentpass token --fresh`) and retry.",
};

/** GET /api: the index an agent reads first. */
export function buildApiIndex() {
  return {
    name: "AgentPass reference notes API",
    authentication: AUTHENTICATION,
    endpoints: ENDPOINTS.map((endpoint) => ({
      method: endpoint.method,
      path: endpoint.path.replace(/\{(\w+)\}/g, ":$1"),
      description: endpoint.description,
      auth: endpoint.authenticated ? "x-session-token: $(agentpass token)" : "none",
    })),
    openapi: "/api/openapi.json",
    docs: "/docs",
  };
}

function schema(type: ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(type, {
    io: "input",
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return rest;
}

/** The OpenAPI 3.1 document, built from the same schemas the routes validate with. */
export function buildOpenApiDocument(publicUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const endpoint of ENDPOINTS) {
    const [status, description, body] = endpoint.success;
    const querySchema = endpoint.query ? schema(endpoint.query) : undefined;
    const properties = (querySchema?.properties ?? {}) as Record<string, unknown>;
    paths[endpoint.path] ??= {};
    (paths[endpoint.path] as Record<string, unknown>)[endpoint.method.toLowerCase()] = {
      summary: endpoint.description,
      ...(endpoint.authenticated && { security: [{ sessionToken: [] }] }),
      parameters: [
        ...(endpoint.path.includes("{id}")
          ? [{ name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } }]
          : []),
        ...Object.entries(properties).map(([name, property]) => ({
          name,
          in: "query",
          required: false,
          schema: property,
        })),
      ],
      ...(endpoint.body && {
        requestBody: {
          required: true,
          content: { "application/json": { schema: schema(endpoint.body) } },
        },
      }),
      responses: {
        [status]: body
          ? { description, content: { "application/json": { schema: schema(body) } } }
          : { description },
        ...Object.fromEntries(
          Object.entries(endpoint.errors).map(([code, text]) => [
            code,
            { description: text, content: { "application/json": { schema: schema(ErrorSchema) } } },
          ]),
        ),
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "AgentPass reference notes API",
      version: "0.1.0",
      description: AUTHENTICATION.description,
    },
    servers: [{ url: publicUrl }],
    components: {
      securitySchemes: {
        sessionToken: {
          type: "apiKey",
          in: "header",
          name: "x-session-token",
          description: "$(agentpass token)",
        },
      },
    },
    paths,
  };
}
