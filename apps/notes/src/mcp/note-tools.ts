import { HttpError } from "@agentpass/http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { z } from "zod";
import { ERRORS } from "../errors.ts";
import { presentNote } from "../presenters.ts";
import {
  DeletedAnswer,
  NoteAnswer,
  NoteCreate,
  NoteId,
  NoteListQuery,
  NotePage,
  NotePatch,
  newNoteOf,
} from "../schemas.ts";
import { type McpScope, toolResult } from "./tool-result.ts";

const NOT_FOUND = new HttpError(ERRORS.note_not_found);
// Every tool works on the caller's own notes in this service and nowhere else.
const READ = { readOnlyHint: true, openWorldHint: false } as const;

/**
 * The notes tools: the same schemas, store calls and presenters as `/api/notes`, so a tool and
 * its REST endpoint take, do and answer the same.
 */
export function registerNoteTools(server: McpServer, scope: McpScope): void {
  const { ctx, user } = scope;
  const listNotes = (tool: string, query: z.output<typeof NoteListQuery>) =>
    toolResult(scope, tool, async () => {
      const { notes, total } = await ctx.store.listNotes(user.id, query);
      return { notes: notes.map(presentNote), total };
    });

  server.registerTool(
    "search_notes",
    {
      title: "Search notes",
      description:
        "Search your notes: every whitespace-separated term must occur, ignoring case, in the title or contentText (`kube` finds `Kubernetes`). Newest-updated first; `total` counts every match. Optionally within one tag; paginate with limit and offset.",
      inputSchema: NoteListQuery.required({ search: true }),
      outputSchema: NotePage,
      annotations: { title: "Search notes", ...READ },
    },
    (query) => listNotes("search_notes", query),
  );

  server.registerTool(
    "list_notes",
    {
      title: "List notes",
      description:
        "List your notes, newest-updated first, with the total; optionally searched (as search_notes), filtered by tag, and paginated (limit 1–500, default 100; offset).",
      inputSchema: NoteListQuery,
      outputSchema: NotePage,
      annotations: { title: "List notes", ...READ },
    },
    (query) => listNotes("list_notes", query),
  );

  server.registerTool(
    "get_note",
    {
      title: "Get a note",
      description: "Fetch one of your notes by id, with its content and tags.",
      inputSchema: NoteId,
      outputSchema: NoteAnswer,
      annotations: { title: "Get a note", ...READ },
    },
    ({ id }) =>
      toolResult(scope, "get_note", async () => {
        const note = await ctx.store.getNote(user.id, id);
        return note ? { note: presentNote(note) } : NOT_FOUND;
      }),
  );

  server.registerTool(
    "create_note",
    {
      title: "Create a note",
      description:
        "Create a note: a title (1–500 characters), optional contentText (plain text, searched), content (any JSON document, default []) and tagIds.",
      inputSchema: NoteCreate,
      outputSchema: NoteAnswer,
      annotations: {
        title: "Create a note",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    (input) =>
      toolResult(scope, "create_note", async () => {
        const { fields, tagIds } = newNoteOf(input);
        const note = await ctx.store.createNote(
          user.id,
          fields,
          tagIds,
          ctx.clock(),
          user.agent ?? null,
        );
        return { note: presentNote(note) };
      }),
  );

  server.registerTool(
    "update_note",
    {
      title: "Update a note",
      description:
        "Update a note: any subset of title, contentText, content and tagIds; the fields given replace the old ones (tagIds replaces the whole set).",
      inputSchema: NotePatch.extend(NoteId.shape),
      outputSchema: NoteAnswer,
      annotations: {
        title: "Update a note",
        readOnlyHint: false,
        destructiveHint: true, // the old title, text or content are gone
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ id, tagIds, ...fields }) =>
      toolResult(scope, "update_note", async () => {
        const note = await ctx.store.updateNote(user.id, id, fields, tagIds, ctx.clock());
        return note ? { note: presentNote(note) } : NOT_FOUND;
      }),
  );

  server.registerTool(
    "delete_note",
    {
      title: "Delete a note",
      description: "Delete one of your notes for good.",
      inputSchema: NoteId,
      outputSchema: DeletedAnswer,
      annotations: {
        title: "Delete a note",
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ id }) =>
      toolResult(scope, "delete_note", async () =>
        (await ctx.store.deleteNote(user.id, id)) ? { id, deleted: true } : NOT_FOUND,
      ),
  );
}
