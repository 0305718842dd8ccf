import { HttpError } from "@agentpass/http";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ERRORS } from "../errors.ts";
import { presentTag } from "../presenters.ts";
import { DeletedAnswer, TagAnswer, TagId, TagInput, TagList } from "../schemas.ts";
import { type McpScope, toolResult } from "./tool-result.ts";

const NOT_FOUND = new HttpError(ERRORS.tag_not_found);
const EXISTS = new HttpError(ERRORS.tag_exists);

/** The tags tools: the same schemas, store calls and presenters as `/api/tags`. */
export function registerTagTools(server: McpServer, scope: McpScope): void {
  const { ctx, user } = scope;

  server.registerTool(
    "list_tags",
    {
      title: "List tags",
      description: "List your tags by name; a tag's id filters notes (list_notes tagId).",
      outputSchema: TagList,
      annotations: { title: "List tags", readOnlyHint: true, openWorldHint: false },
    },
    () =>
      toolResult(scope, "list_tags", async () => ({
        tags: (await ctx.store.listTags(user.id)).map(presentTag),
      })),
  );

  server.registerTool(
    "create_tag",
    {
      title: "Create a tag",
      description: "Create a tag (1–100 characters); names are unique per user, ignoring case.",
      inputSchema: TagInput,
      outputSchema: TagAnswer,
      annotations: {
        title: "Create a tag",
        readOnlyHint: false,
        destructiveHint: false,
        // A second call with the same name changes nothing: it answers tag_exists.
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ name }) =>
      toolResult(scope, "create_tag", async () => {
        const tag = await ctx.store.createTag(user.id, name, ctx.clock());
        return tag ? { tag: presentTag(tag) } : EXISTS;
      }),
  );

  server.registerTool(
    "rename_tag",
    {
      title: "Rename a tag",
      description: "Rename one of your tags; every note carrying it shows the new name.",
      inputSchema: TagInput.extend(TagId.shape),
      outputSchema: TagAnswer,
      annotations: {
        title: "Rename a tag",
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ id, name }) =>
      toolResult(scope, "rename_tag", async () => {
        const tag = await ctx.store.renameTag(user.id, id, name);
        if (tag === "exists") return EXISTS;
        return tag ? { tag: presentTag(tag) } : NOT_FOUND;
      }),
  );

  server.registerTool(
    "delete_tag",
    {
      title: "Delete a tag",
      description: "Delete one of your tags; it is removed from every note (the notes stay).",
      inputSchema: TagId,
      outputSchema: DeletedAnswer,
      annotations: {
        title: "Delete a tag",
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: true,
        openWorldHint: false,
      },
    },
    ({ id }) =>
      toolResult(scope, "delete_tag", async () =>
        (await ctx.store.deleteTag(user.id, id)) ? { id, deleted: true } : NOT_FOUND,
      ),
  );
}
