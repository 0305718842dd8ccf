import { HttpError } from "@agentpass/http";
import { Hono } from "hono";
import type { NotesContext, NotesEnv } from "../context.ts";
import { presentTag } from "../presenters.ts";
import { readBody, readId } from "../request.ts";
import { TagInput } from "../schemas.ts";

const NOT_FOUND = new HttpError(404, "Tag not found");
const EXISTS = new HttpError(409, "Tag already exists");

/** /api/tags: the caller's tags, by name; names unique per user ignoring case. */
export function tagRoutes(ctx: NotesContext) {
  return new Hono<NotesEnv>()
    .get("/api/tags", async (c) => {
      const tags = await ctx.store.listTags(c.var.user.id);
      return c.json({ tags: tags.map(presentTag) });
    })
    .post("/api/tags", async (c) => {
      const { name } = await readBody(c, TagInput);
      const tag = await ctx.store.createTag(c.var.user.id, name, ctx.clock());
      if (!tag) throw EXISTS;
      return c.json({ tag: presentTag(tag) }, 201);
    })
    .patch("/api/tags/:id", async (c) => {
      const id = readId(c, "tag");
      const { name } = await readBody(c, TagInput);
      const tag = await ctx.store.renameTag(c.var.user.id, id, name);
      if (tag === "exists") throw EXISTS;
      if (!tag) throw NOT_FOUND;
      return c.json({ tag: presentTag(tag) });
    })
    .delete("/api/tags/:id", async (c) => {
      if (!(await ctx.store.deleteTag(c.var.user.id, readId(c, "tag")))) throw NOT_FOUND;
      return c.body(null, 204);
    });
}
