import { defineEndpoint, type Endpoint, HttpError } from "@agentpass/http";
import type { z } from "zod";
import type { NotesContext } from "../context.ts";
import { AUTH_ERRORS, ERRORS } from "../errors.ts";
import { presentTag } from "../presenters.ts";
import { TagAnswer, TagId, TagInput, TagList } from "../schemas.ts";
import { type Authenticate, SESSION_TOKEN_SECURITY } from "./authenticate.ts";
import { admitUser, refuseNotesInput } from "./input.ts";

const NOT_FOUND = new HttpError(ERRORS.tag_not_found);
const EXISTS = new HttpError(ERRORS.tag_exists);
const BODY_ERRORS = [ERRORS.invalid_json_body, ERRORS.invalid_body, ERRORS.body_too_large];
const json = (description: string, schema: z.ZodType) => ({
  description,
  content: { "application/json": { schema } },
});

/** /api/tags: the caller's tags, by name; names unique per user ignoring case. */
export function tagEndpoints(ctx: NotesContext, authenticateUser: Authenticate): Endpoint[] {
  const admit = admitUser(authenticateUser);
  return [
    defineEndpoint({
      method: "GET",
      path: "/api/tags",
      operation: {
        operationId: "listTags",
        description: "The caller's tags, by name ignoring case.",
        tags: ["Tags"],
        summary: "List your tags by name",
        security: SESSION_TOKEN_SECURITY,
        responses: { "200": json("Your tags", TagList) },
      },
      errors: AUTH_ERRORS,
      admit,
      async handle(_request, { admitted: user }) {
        const tags = await ctx.store.listTags(user.id);
        return { status: 200, body: { tags: tags.map(presentTag) } };
      },
    }),
    defineEndpoint({
      method: "POST",
      path: "/api/tags",
      operation: {
        operationId: "createTag",
        description:
          "A name of 1 to 100 characters, unique among the caller's tags ignoring case (409 otherwise).",
        tags: ["Tags"],
        summary: "Create a tag (names are unique per user, ignoring case)",
        security: SESSION_TOKEN_SECURITY,
        responses: { "201": json("The new tag", TagAnswer) },
      },
      errors: [...BODY_ERRORS, ERRORS.tag_exists, ...AUTH_ERRORS],
      admit,
      input: { body: TagInput },
      refuseInput: refuseNotesInput(),
      async handle(_request, { admitted: user, body }) {
        const tag = await ctx.store.createTag(user.id, body.name, ctx.clock());
        if (!tag) return EXISTS;
        return { status: 201, body: { tag: presentTag(tag) } };
      },
    }),
    defineEndpoint({
      method: "PATCH",
      path: "/api/tags/{id}",
      operation: {
        operationId: "renameTag",
        description:
          "Renames one of the caller's tags; the notes that carry it keep it. 409 for a name another of the caller's tags has.",
        tags: ["Tags"],
        summary: "Rename a tag",
        security: SESSION_TOKEN_SECURITY,
        responses: { "200": json("The renamed tag", TagAnswer) },
      },
      errors: [
        ERRORS.invalid_tag_id,
        ...BODY_ERRORS,
        ERRORS.tag_not_found,
        ERRORS.tag_exists,
        ...AUTH_ERRORS,
      ],
      admit,
      input: { params: TagId, body: TagInput },
      refuseInput: refuseNotesInput(ERRORS.invalid_tag_id),
      async handle(_request, { admitted: user, params, body }) {
        const tag = await ctx.store.renameTag(user.id, params.id, body.name);
        if (tag === "exists") return EXISTS;
        if (!tag) return NOT_FOUND;
        return { status: 200, body: { tag: presentTag(tag) } };
      },
    }),
    defineEndpoint({
      method: "DELETE",
      path: "/api/tags/{id}",
      operation: {
        operationId: "deleteTag",
        description:
          "Deletes one of the caller's tags and removes it from every note, whose `updatedAt` stays.",
        tags: ["Tags"],
        summary: "Delete a tag (it is removed from every note)",
        security: SESSION_TOKEN_SECURITY,
        responses: { "204": { description: "Deleted" } },
      },
      errors: [ERRORS.invalid_tag_id, ERRORS.tag_not_found, ...AUTH_ERRORS],
      admit,
      input: { params: TagId },
      refuseInput: refuseNotesInput(ERRORS.invalid_tag_id),
      async handle(_request, { admitted: user, params }) {
        if (!(await ctx.store.deleteTag(user.id, params.id))) return NOT_FOUND;
        return { status: 204 };
      },
    }),
  ];
}
