import { defineEndpoint, type Endpoint, HttpError } from "@agentpass/http";
import type { z } from "zod";
import type { NotesContext } from "../context.ts";
import { AUTH_ERRORS, ERRORS } from "../errors.ts";
import { presentNote } from "../presenters.ts";
import {
  NoteAnswer,
  NoteCreate,
  NoteId,
  NoteListQuery,
  NotePage,
  NotePatch,
  newNoteOf,
} from "../schemas.ts";
import { type Authenticate, SESSION_TOKEN_SECURITY } from "./authenticate.ts";
import { admitUser, refuseNotesInput } from "./input.ts";

const NOT_FOUND = new HttpError(ERRORS.note_not_found);
const BODY_ERRORS = [ERRORS.invalid_json_body, ERRORS.invalid_body, ERRORS.body_too_large];
const LIMIT_ERRORS = [ERRORS.note_limit_reached, ERRORS.text_limit_reached];
const json = (description: string, schema: z.ZodType) => ({
  description,
  content: { "application/json": { schema } },
});

/** /api/notes: list and search, read, create, update, delete — the caller's notes only. */
export function noteEndpoints(ctx: NotesContext, authenticateUser: Authenticate): Endpoint[] {
  const admit = admitUser(authenticateUser);
  return [
    defineEndpoint({
      method: "GET",
      path: "/api/notes",
      operation: {
        operationId: "listNotes",
        description:
          "The caller's notes only. `search` matches every term in title or text; `tagId` filters; `limit` and `offset` paginate; `total` counts every match.",
        tags: ["Notes"],
        summary: "List your notes, newest-updated first; search, filter by tag, paginate",
        security: SESSION_TOKEN_SECURITY,
        responses: { "200": json("A page of notes and the total matching", NotePage) },
      },
      errors: [ERRORS.invalid_query, ...AUTH_ERRORS, ERRORS.search_timeout],
      admit,
      input: { query: NoteListQuery },
      refuseInput: refuseNotesInput(),
      async handle(_request, { admitted: user, query }) {
        const { notes, total } = await ctx.store.listNotes(user.id, query);
        return { status: 200, body: { notes: notes.map(presentNote), total } };
      },
    }),
    defineEndpoint({
      method: "GET",
      path: "/api/notes/{id}",
      operation: {
        operationId: "getNote",
        description:
          "One of the caller's notes by id; another person's note is 404, as one that does not exist.",
        tags: ["Notes"],
        summary: "Fetch one of your notes",
        security: SESSION_TOKEN_SECURITY,
        responses: { "200": json("The note", NoteAnswer) },
      },
      errors: [ERRORS.invalid_note_id, ERRORS.note_not_found, ...AUTH_ERRORS],
      admit,
      input: { params: NoteId },
      refuseInput: refuseNotesInput(ERRORS.invalid_note_id),
      async handle(_request, { admitted: user, params }) {
        const note = await ctx.store.getNote(user.id, params.id);
        if (!note) return NOT_FOUND;
        return { status: 200, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/api/notes",
      operation: {
        operationId: "createNote",
        description:
          "A title (1 to 500 characters), an optional block document and its plain text (what search reads), and tags of the caller's; refused 409 past the caller's note or text limits. A note an agent writes names it as `agent`.",
        tags: ["Notes"],
        summary: "Create a note",
        security: SESSION_TOKEN_SECURITY,
        responses: { "201": json("The new note", NoteAnswer) },
      },
      errors: [...BODY_ERRORS, ...LIMIT_ERRORS, ...AUTH_ERRORS],
      admit,
      input: { body: NoteCreate },
      refuseInput: refuseNotesInput(),
      async handle(_request, { admitted: user, body }) {
        const { fields, tagIds } = newNoteOf(body);
        const note = await ctx.store.createNote(
          user.id,
          fields,
          tagIds,
          ctx.clock(),
          user.agent ?? null,
        );
        return { status: 201, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "PATCH",
      path: "/api/notes/{id}",
      operation: {
        operationId: "updateNote",
        description:
          "Changes only the fields sent; `tagIds` replaces the set; `updatedAt` moves. Another person's note is 404.",
        tags: ["Notes"],
        summary:
          "Update a note: any subset of title, content, contentText, tagIds (replaces the set)",
        security: SESSION_TOKEN_SECURITY,
        responses: { "200": json("The updated note", NoteAnswer) },
      },
      errors: [
        ERRORS.invalid_note_id,
        ...BODY_ERRORS,
        ERRORS.note_not_found,
        ...LIMIT_ERRORS,
        ...AUTH_ERRORS,
      ],
      admit,
      input: { params: NoteId, body: NotePatch },
      refuseInput: refuseNotesInput(ERRORS.invalid_note_id),
      async handle(_request, { admitted: user, params, body }) {
        const { tagIds, ...fields } = body;
        const note = await ctx.store.updateNote(user.id, params.id, fields, tagIds, ctx.clock());
        if (!note) return NOT_FOUND;
        return { status: 200, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "DELETE",
      path: "/api/notes/{id}",
      operation: {
        operationId: "deleteNote",
        description:
          "Deletes one of the caller's notes, with its tag links; 204. Another person's note is 404.",
        tags: ["Notes"],
        summary: "Delete a note",
        security: SESSION_TOKEN_SECURITY,
        responses: { "204": { description: "Deleted" } },
      },
      errors: [ERRORS.invalid_note_id, ERRORS.note_not_found, ...AUTH_ERRORS],
      admit,
      input: { params: NoteId },
      refuseInput: refuseNotesInput(ERRORS.invalid_note_id),
      async handle(_request, { admitted: user, params }) {
        if (!(await ctx.store.deleteNote(user.id, params.id))) return NOT_FOUND;
        return { status: 204 };
      },
    }),
  ];
}
