import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerNoteResources } from "./note-resources.ts";
import { registerNoteTools } from "./note-tools.ts";
import { registerTagTools } from "./tag-tools.ts";
import type { McpScope } from "./tool-result.ts";

const INSTRUCTIONS =
  "Your notes and tags in the AgentPass reference notes API. Search with search_notes (every term must occur in the title or text); read a note with get_note or as the resource note://<id>; tag ids from list_tags filter list_notes. Refusals are tool errors whose text is JSON { error, code }.";

/** Largest number of array elements and object members one tool call's arguments may hold. */
const MAX_TOOL_INPUT_ELEMENTS = 10_000;

/**
 * The MCP server of one request, acting for `scope.user` only: the notes and tags tools and the
 * notes as resources. Built per request (stateless), so nothing of one caller outlives it.
 */
export function createNotesMcpServer(scope: McpScope): McpServer {
  const server = new McpServer(
    { name: "agentpass-notes", title: "AgentPass reference notes API", version: "0.1.0" },
    {
      instructions: INSTRUCTIONS,
      maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS,
      capabilities: { tools: {}, resources: {} },
    },
  );
  registerNoteTools(server, scope);
  registerTagTools(server, scope);
  registerNoteResources(server, scope);
  return server;
}
