import {
  type Answer,
  COMMON_ERRORS,
  type DocumentedRoute,
  defineEndpoint,
  type Endpoint,
  HttpError,
  MAX_JSON_DEPTH,
} from "@agentpass/http";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Logger } from "pino";
import { z } from "zod";
import type { NotesContext } from "../context.ts";
import { AUTH_ERRORS, ERRORS } from "../errors.ts";
import type { Authenticate } from "../routes/authenticate.ts";
import { createNotesMcpServer } from "./server.ts";

const MCP_PATH = "/mcp";

const ORIGIN_REFUSED = new HttpError(ERRORS.origin_not_allowed);
/** The security of `/mcp`: an OAuth access token from AgentPass bound to it (app.ts declares it). */
const MCP_SECURITY: Record<string, string[]>[] = [{ boundToken: [] }];

// JSON-RPC 2.0 as MCP carries it: the document names the envelope, the MCP specification the rest.
const JsonRpcId = z.union([z.string(), z.number(), z.null()]);
const JsonRpcMessage = z
  .looseObject({
    jsonrpc: z.literal("2.0"),
    id: JsonRpcId.optional(),
    method: z.string().optional(),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: "JsonRpcMessage", description: "A JSON-RPC 2.0 request or notification of MCP" });
const JsonRpcError = z
  .looseObject({
    jsonrpc: z.literal("2.0"),
    id: JsonRpcId,
    error: z.looseObject({
      code: z.number().int(),
      message: z.string(),
      data: z.unknown().optional(),
    }),
  })
  .meta({ id: "JsonRpcError", description: "A JSON-RPC 2.0 error" });
const JsonRpcResponse = z
  .union([
    z.looseObject({ jsonrpc: z.literal("2.0"), id: JsonRpcId, result: z.unknown() }),
    JsonRpcError,
  ])
  .meta({ id: "JsonRpcResponse", description: "A JSON-RPC 2.0 result or error" });
const jsonRpc = (description: string, schema: z.ZodType) => ({
  description,
  content: { "application/json": { schema } },
});

// The request headers the transport reads; the rest (the token among them) stay out of its reach.
const TRANSPORT_HEADERS = ["accept", "content-type", "mcp-protocol-version"];

/**
 * `POST /mcp`: the notes as an MCP server over Streamable HTTP, served by the one API router like
 * every endpoint (so it gets the same access log, request ids, body limit and error answers).
 * Stateless: each request authenticates, gets a server and transport of its own, and is
 * answered with JSON, never a stream; GET and DELETE (a session's stream, a session's end) are
 * the router's 405, as the specification allows a server without sessions (`MCP_UNSERVED`).
 */
export function mcpEndpoint(
  ctx: NotesContext,
  options: { publicUrl: string; logger: Logger; authenticate: Authenticate },
): Endpoint {
  const publicOrigin = new URL(options.publicUrl).origin;
  const url = `${options.publicUrl}${MCP_PATH}`;
  return defineEndpoint({
    method: "POST",
    path: MCP_PATH,
    // The document describes the HTTP exchange and JSON-RPC's envelope; the MCP specification
    // (tools/list, resources/list) describes the methods.
    operation: {
      operationId: "mcpMessage",
      tags: ["MCP"],
      summary: "MCP server (Streamable HTTP): the notes and tags tools, notes as resources",
      description:
        "One JSON-RPC message (or a batch) per request, answered with JSON, never a stream; no sessions. Send `Accept: application/json, text/event-stream`. A 401's `WWW-Authenticate` names the protected resource metadata (RFC 9728) that says where AgentPass issues tokens for this resource.",
      security: MCP_SECURITY,
      responses: {
        "200": jsonRpc(
          "The answer to a request (an array for a batch)",
          z.union([JsonRpcResponse, z.array(JsonRpcResponse)]),
        ),
        "202": { description: "Notifications or responses only: accepted, nothing to answer" },
        "400": jsonRpc("Not JSON, or not a JSON-RPC message MCP takes", JsonRpcError),
        "406": jsonRpc(
          "Accept does not take both application/json and text/event-stream",
          JsonRpcError,
        ),
        "415": jsonRpc("Content-Type is not application/json", JsonRpcError),
      },
    },
    errors: [
      ERRORS.origin_not_allowed,
      ERRORS.session_token_unbound,
      ERRORS.body_too_large,
      ...AUTH_ERRORS,
    ],
    async admit(request) {
      // DNS rebinding: a page of another origin that resolves our name to this host must not
      // reach it. Agents send no Origin; a browser page of our own public origin may.
      const origin = request.header("origin");
      if (origin !== undefined && origin !== publicOrigin) {
        return { ok: false, answer: ORIGIN_REFUSED };
      }
      return { ok: true, admitted: await options.authenticate(request) };
    },
    input: { body: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]) },
    // As the transport answers a message it cannot read.
    refuseInput(failure) {
      if (failure.problem === "not_json") {
        return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
      }
      if (failure.problem === "too_deep") {
        const message = `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
        return jsonRpcError(400, -32600, message);
      }
      return jsonRpcError(400, -32700, "Parse error: Invalid JSON-RPC message");
    },
    async handle(request, { admitted: user, body }) {
      const headers = new Headers();
      for (const name of TRANSPORT_HEADERS) {
        const value = request.header(name);
        if (value !== undefined) headers.set(name, value);
      }
      const server = createNotesMcpServer({ ctx, user, logger: options.logger });
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      try {
        await server.connect(transport);
        const response = await transport.handleRequest(
          new Request(url, { method: "POST", headers }),
          { parsedBody: body },
        );
        return await answerOf(response);
      } finally {
        await server.close();
      }
    },
  });
}

/** The transport's answer as the router writes answers. */
async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== "content-type" && name !== "content-length") headers[name] = value;
  });
  const data = await response.text();
  const type = response.headers.get("content-type");
  if (data === "" || type === null) return { status: response.status, headers };
  return { status: response.status, content: { type, data }, headers };
}

/** A JSON-RPC error without an id, as the transport itself answers a request it cannot read. */
function jsonRpcError(status: number, code: number, message: string): Answer {
  return { status, body: { jsonrpc: "2.0", error: { code, message }, id: null } };
}

/**
 * GET and DELETE of `/mcp`, which the specification lets a server without streams or sessions
 * refuse with 405: the router's answer for a method the path does not take, documented so a
 * client reads it as "no stream here" rather than as a fault.
 */
export const MCP_UNSERVED: DocumentedRoute[] = [
  {
    method: "GET",
    operationId: "mcpStream",
    summary: "No server-to-client stream: always 405",
    description: "This server pushes nothing between requests: each POST is answered in full.",
  },
  {
    method: "DELETE",
    operationId: "mcpEndSession",
    summary: "No sessions to end: always 405",
    description: "The server is stateless: there is no session to end.",
  },
].map(({ method, operationId, summary, description }) => ({
  method: method as "GET" | "DELETE",
  path: MCP_PATH,
  operation: { operationId, summary, description, tags: ["MCP"], security: [], responses: {} },
  errors: [COMMON_ERRORS.method_not_allowed],
}));
