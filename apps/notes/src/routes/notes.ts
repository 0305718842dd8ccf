import { HttpError } from "@agentpass/http";
import { Hono } from "hono";
import type { NotesContext, NotesEnv } from "../context.ts";
import { presentNote } from "../presenters.ts";
import { readBody, readId, readQuery } from "../request.ts";
import { NoteCreate, NoteListQuery, NotePatch } from "../schemas.ts";
import type { ListQuery, NotesPage } from "../store/store.ts";

const NOT_FOUND = new HttpError(404, "Note not found");

/** The answer of `GET /api/notes`, here and on the fast path (`fast-list.ts`). */
export async function notesPage(ctx: NotesContext, userId: string, query: ListQuery) {
  return presentPage(await ctx.store.listNotes(userId, query));
}

/** The JSON form of a page of notes. */
export function presentPage({ notes, total }: NotesPage) {
  return { notes: notes.map(presentNote), total };
}

/** /api/notes: list and search, read, create, update, delete — the caller's notes only. */
export function noteRoutes(ctx: NotesContext) {
  return new Hono<NotesEnv>()
    .get("/api/notes", async (c) =>
      c.json(await notesPage(ctx, c.var.user.id, readQuery(c, NoteListQuery))),
    )
    .get("/api/notes/:id", async (c) => {
      const note = await ctx.store.getNote(c.var.user.id, readId(c, "note"));
      if (!note) throw NOT_FOUND;
      return c.json({ note: presentNote(note) });
    })
    .post("/api/notes", async (c) => {
      const input = await readBody(c, NoteCreate);
      const note = await ctx.store.createNote(
        c.var.user.id,
        { title: input.title, content: input.content ?? [], contentText: input.contentText ?? "" },
        input.tagIds ?? [],
        ctx.clock(),
      );
      return c.json({ note: presentNote(note) }, 201);
    })
    .patch("/api/notes/:id", async (c) => {
      const id = readId(c, "note");
      const input = await readBody(c, NotePatch);
      const { tagIds, ...fields } = input;
      const note = await ctx.store.updateNote(c.var.user.id, id, fields, tagIds, ctx.clock());
      if (!note) throw NOT_FOUND;
      return c.json({ note: presentNote(note) });
    })
    .delete("/api/notes/:id", async (c) => {
      if (!(await ctx.store.deleteNote(c.var.user.id, readId(c, "note")))) throw NOT_FOUND;
      return c.body(null, 204);
    });
}
