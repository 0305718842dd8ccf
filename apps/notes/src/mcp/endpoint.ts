import { type Answer, defineEndpoint, type Endpoint, HttpError } from "@agentpass/http";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Logger } from "pino";
import type { NotesContext } from "../context.ts";
import { AUTH_ERRORS, ERRORS } from "../errors.ts";
import { depthOf, MAX_JSON_DEPTH } from "../request.ts";
import type { Authenticate } from "../routes/authenticate.ts";
import { createNotesMcpServer } from "./server.ts";

export const MCP_PATH = "/mcp";

const ORIGIN_REFUSED = new HttpError(ERRORS.origin_not_allowed);
// The request headers the transport reads; the rest (the token among them) stay out of its reach.
const TRANSPORT_HEADERS = ["accept", "content-type", "mcp-protocol-version"];

/**
 * `POST /mcp`: the notes as an MCP server over Streamable HTTP, served by the one API router like
 * every endpoint (so it gets the same access log, request ids, body limit and error answers).
 * Stateless: each request authenticates, gets a server and transport of its own, and is
 * answered with JSON, never a stream; GET and DELETE (a session's stream, a session's end) are
 * the router's 405, as the specification allows a server without sessions.
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
    // MCP is JSON-RPC, which an OpenAPI document cannot describe; the index lists it.
    undocumented: true,
    operation: {
      summary: "MCP server (Streamable HTTP): the notes and tags tools, notes as resources",
      security: [{ boundToken: [] }],
      responses: {},
    },
    errors: [ERRORS.origin_not_allowed, ERRORS.session_token_unbound, ...AUTH_ERRORS],
    async handle(request) {
      // DNS rebinding: a page of another origin that resolves our name to this host must not
      // reach it. Agents send no Origin; a browser page of our own public origin may.
      const origin = request.header("origin");
      if (origin !== undefined && origin !== publicOrigin) return ORIGIN_REFUSED;
      const user = await options.authenticate(request);
      const body = await request.readJson();
      if (!body.ok) return jsonRpcError(400, -32700, "Parse error: Invalid JSON");
      if (depthOf(body.value) > MAX_JSON_DEPTH) {
        return jsonRpcError(
          400,
          -32600,
          `Invalid Request: JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
        );
      }
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
          { parsedBody: body.value },
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
