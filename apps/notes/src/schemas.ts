import { z } from "zod";
import { SEARCH_LIMITS, searchLimitProblem, searchTerms } from "./store/search.ts";

/**
 * Text a person can store: no NUL characters (PostgreSQL cannot hold them) and no lone
 * surrogates (not Unicode; they cannot be encoded as UTF-8).
 */
const storableText = z
  .string()
  .refine((value) => !value.includes("\u0000"), "must not contain NUL characters")
  .refine((value) => value.isWellFormed(), "must not contain lone surrogates");

function trimmedText(min: number, max: number) {
  return storableText
    .transform((value) => value.trim())
    .refine((value) => {
      const length = [...value].length;
      return length >= min && length <= max;
    }, `must be ${min} to ${max} characters after trimming`);
}

type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Whether `value` is what `JSON.parse` gives: plain objects and arrays of JSON values. */
function isJsonValue(value: unknown): value is JsonValue {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonValue);
  if (typeof value !== "object") return false;
  const prototype = Object.getPrototypeOf(value);
  return (
    (prototype === Object.prototype || prototype === null) &&
    Object.values(value).every(isJsonValue)
  );
}

/**
 * A JSON document, kept exactly as the request body held it. zod's `z.json()` builds every
 * object again by assignment, which turns a `"__proto__"` key into the copy's prototype: the key
 * and its value were lost without an error. The body's nesting is bounded before any schema runs
 * (the router's `MAX_JSON_DEPTH`), so the check's recursion is too. A checked `unknown` rather than `z.custom`, which
 * has no JSON Schema: MCP tools publish theirs from these schemas (the cast only names the type
 * the check guarantees).
 */
const JsonDocument = z
  .unknown()
  .check((ctx) => {
    if (!isJsonValue(ctx.value)) {
      ctx.issues.push({ code: "custom", message: "must be a JSON value", input: ctx.value });
    }
  })
  .meta({
    description: "Any JSON value",
    example: [{ type: "paragraph", text: "Hello" }],
  }) as unknown as z.ZodType<JsonValue>;

/** A UUID, compared in lower case as the ids are generated. */
export const Uuid = z.uuid().transform((value) => value.toLowerCase());

/** The note a route's `{id}` or an MCP tool's `id` names. */
export const NoteId = z.object({ id: Uuid.meta({ description: "The note's id" }) });
/** The tag a route's `{id}` or an MCP tool's `id` names. */
export const TagId = z.object({ id: Uuid.meta({ description: "The tag's id" }) });

export const NoteCreate = z.object({
  title: trimmedText(1, 500).describe("1 to 500 characters after trimming"),
  content: JsonDocument.optional().describe("Block-based rich text document; defaults to []"),
  contentText: storableText.optional().describe("Plain text of the content, used by search"),
  tagIds: z.array(Uuid).max(100).optional().describe("Tags to assign; others' tags are ignored"),
});

/** A new note's stored fields and tags: what `NoteCreate` leaves out takes its default. */
export function newNoteOf(input: z.output<typeof NoteCreate>) {
  return {
    fields: {
      title: input.title,
      content: input.content ?? [],
      contentText: input.contentText ?? "",
    },
    tagIds: input.tagIds ?? [],
  };
}

export const NotePatch = NoteCreate.partial().describe(
  "Any subset of the fields; tagIds replaces the set",
);

export const NoteListQuery = z.object({
  search: storableText
    .max(1000)
    .check((ctx) => {
      const problem = searchLimitProblem(searchTerms(ctx.value));
      if (problem) ctx.issues.push({ code: "custom", message: problem, input: ctx.value });
    })
    .optional()
    .describe(
      `Every term must occur in title or contentText; at most ${SEARCH_LIMITS.terms} terms, ${SEARCH_LIMITS.shortTerms} of them shorter than 3 characters, each at most ${SEARCH_LIMITS.termLength} characters and repeating no 3 characters more than ${SEARCH_LIMITS.trigramRepeats} times`,
    ),
  tagId: Uuid.optional().describe("Only notes carrying this tag"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  offset: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
});

export const TagInput = z.object({
  name: trimmedText(1, 100).describe("1 to 100 characters after trimming, unique ignoring case"),
});

const TagSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  createdAt: z.iso.datetime(),
});

const NoteSchema = z.object({
  id: z.uuid(),
  title: z.string(),
  content: JsonDocument,
  contentText: z.string(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  tags: z.array(TagSchema),
  agent: z
    .object({ id: z.string(), name: z.string() })
    .optional()
    .describe("The agent that created the note, when one did (its AgentPass id and name)"),
});

export const NoteAnswer = z.object({ note: NoteSchema });
export const NotePage = z.object({ notes: z.array(NoteSchema), total: z.number().int() });
export const TagAnswer = z.object({ tag: TagSchema });
export const TagList = z.object({ tags: z.array(TagSchema) });
/** What a delete answers where it must answer a body (an MCP tool's structured result). */
export const DeletedAnswer = z.object({ id: z.uuid(), deleted: z.literal(true) });
