import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { presentNote } from "../presenters.ts";
import { NoteListQuery, Uuid } from "../schemas.ts";
import { answerOfMcpFault, type McpScope } from "./tool-result.ts";

/** The MCP specification's code for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;
/** A listing is the first page of `GET /api/notes`: the newest-updated notes, 100 of them. */
const NEWEST = NoteListQuery.parse({});

/** The URI of a note as a resource. */
function noteUri(id: string): string {
  return `note://${id}`;
}

/**
 * Notes as resources, `note://<id>`, read as the JSON of `GET /api/notes/:id`'s `note`. The
 * listing holds the newest-updated 100; every note is readable by its URI, and the tools
 * (list_notes, search_notes) reach the rest.
 */
export function registerNoteResources(server: McpServer, scope: McpScope): void {
  const { ctx, user } = scope;
  const template = new ResourceTemplate(noteUri("{id}"), {
    list: () =>
      guarded(scope, "resources/list", async () => {
        const { notes } = await ctx.store.listNotes(user.id, NEWEST);
        return {
          resources: notes.map((note) => ({
            uri: noteUri(note.id),
            name: note.title,
            mimeType: "application/json",
          })),
        };
      }),
  });
  server.registerResource(
    "note",
    template,
    {
      title: "Note",
      description: "One of your notes as JSON: title, content, contentText, tags, times",
      mimeType: "application/json",
    },
    (uri, variables) =>
      guarded(scope, "resources/read", async () => {
        const id = Uuid.safeParse(variables.id);
        const note = id.success ? await ctx.store.getNote(user.id, id.data) : undefined;
        if (!note) throw new McpError(RESOURCE_NOT_FOUND, "Resource not found", { uri: uri.href });
        return {
          contents: [
            {
              uri: uri.href,
              mimeType: "application/json",
              text: JSON.stringify(presentNote(note)),
            },
          ],
        };
      }),
  );
}

/**
 * Runs a resource handler; what it threw other than an `McpError` becomes a JSON-RPC error
 * carrying the REST API's `{ error, code }` (and request id), never the thrown message.
 */
async function guarded<T>(scope: McpScope, operation: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof McpError) throw error;
    const refusal = answerOfMcpFault(scope, error, operation);
    throw new McpError(ErrorCode.InternalError, String(refusal.error), refusal);
  }
}
