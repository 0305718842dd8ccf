import { defineEndpoint, type Endpoint, HttpError } from "@agentpass/http";
import type { z } from "zod";
import type { NotesContext } from "../context.ts";
import { AUTH_ERRORS, ERRORS } from "../errors.ts";
import { presentNote } from "../presenters.ts";
import { readBody, readId, readQuery } from "../request.ts";
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

const NOT_FOUND = new HttpError(ERRORS.note_not_found);
const BODY_ERRORS = [ERRORS.invalid_json_body, ERRORS.invalid_body, ERRORS.body_too_large];
const LIMIT_ERRORS = [ERRORS.note_limit_reached, ERRORS.text_limit_reached];
const json = (description: string, schema: z.ZodType) => ({
  description,
  content: { "application/json": { schema } },
});

/** /api/notes: list and search, read, create, update, delete — the caller's notes only. */
export function noteEndpoints(ctx: NotesContext, authenticateUser: Authenticate): Endpoint[] {
  return [
    defineEndpoint({
      method: "GET",
      path: "/api/notes",
      operation: {
        operationId: "listNotes",
        summary: "List your notes, newest-updated first; search, filter by tag, paginate",
        security: SESSION_TOKEN_SECURITY,
        requestParams: { query: NoteListQuery },
        responses: { "200": json("A page of notes and the total matching", NotePage) },
      },
      errors: [ERRORS.invalid_query, ...AUTH_ERRORS, ERRORS.search_timeout],
      async handle(request) {
        const user = await authenticateUser(request);
        const { notes, total } = await ctx.store.listNotes(
          user.id,
          readQuery(request, NoteListQuery),
        );
        return { status: 200, body: { notes: notes.map(presentNote), total } };
      },
    }),
    defineEndpoint({
      method: "GET",
      path: "/api/notes/{id}",
      operation: {
        operationId: "getNote",
        summary: "Fetch one of your notes",
        security: SESSION_TOKEN_SECURITY,
        requestParams: { path: NoteId },
        responses: { "200": json("The note", NoteAnswer) },
      },
      errors: [ERRORS.invalid_note_id, ERRORS.note_not_found, ...AUTH_ERRORS],
      async handle(request) {
        const user = await authenticateUser(request);
        const note = await ctx.store.getNote(user.id, readId(request, "note"));
        if (!note) return NOT_FOUND;
        return { status: 200, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/api/notes",
      operation: {
        operationId: "createNote",
        summary: "Create a note",
        security: SESSION_TOKEN_SECURITY,
        requestBody: { required: true, content: { "application/json": { schema: NoteCreate } } },
        responses: { "201": json("The new note", NoteAnswer) },
      },
      errors: [...BODY_ERRORS, ...LIMIT_ERRORS, ...AUTH_ERRORS],
      async handle(request) {
        const user = await authenticateUser(request);
        const { fields, tagIds } = newNoteOf(await readBody(request, NoteCreate));
        const note = await ctx.store.createNote(user.id, fields, tagIds, ctx.clock());
        return { status: 201, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "PATCH",
      path: "/api/notes/{id}",
      operation: {
        operationId: "updateNote",
        summary:
          "Update a note: any subset of title, content, contentText, tagIds (replaces the set)",
        security: SESSION_TOKEN_SECURITY,
        requestParams: { path: NoteId },
        requestBody: { required: true, content: { "application/json": { schema: NotePatch } } },
        responses: { "200": json("The updated note", NoteAnswer) },
      },
      errors: [
        ERRORS.invalid_note_id,
        ...BODY_ERRORS,
        ERRORS.note_not_found,
        ...LIMIT_ERRORS,
        ...AUTH_ERRORS,
      ],
      async handle(request) {
        const user = await authenticateUser(request);
        const id = readId(request, "note");
        const { tagIds, ...fields } = await readBody(request, NotePatch);
        const note = await ctx.store.updateNote(user.id, id, fields, tagIds, ctx.clock());
        if (!note) return NOT_FOUND;
        return { status: 200, body: { note: presentNote(note) } };
      },
    }),
    defineEndpoint({
      method: "DELETE",
      path: "/api/notes/{id}",
      operation: {
        operationId: "deleteNote",
        summary: "Delete a note",
        security: SESSION_TOKEN_SECURITY,
        requestParams: { path: NoteId },
        responses: { "204": { description: "Deleted" } },
      },
      errors: [ERRORS.invalid_note_id, ERRORS.note_not_found, ...AUTH_ERRORS],
      async handle(request) {
        const user = await authenticateUser(request);
        if (!(await ctx.store.deleteNote(user.id, readId(request, "note")))) return NOT_FOUND;
        return { status: 204 };
      },
    }),
  ];
}
