import { HttpError, readJsonBody } from "@agentpass/http";
import type { Context } from "hono";
import { type ZodType, z } from "zod";
import { Uuid } from "./schemas.ts";

/** Notes bodies may carry documents; anything over 1 MiB is refused before it is read. */
export const MAX_BODY_BYTES = 1024 * 1024;
const MAX_JSON_DEPTH = 64;

/** The body as JSON, validated by `schema`: 400 with the spec's messages otherwise. */
export async function readBody<T extends ZodType>(c: Context, schema: T): Promise<z.output<T>> {
  const body = await readJsonBody(c, MAX_BODY_BYTES);
  if (!body.ok) throw new HttpError(400, "Request body must be valid JSON");
  if (depthOf(body.value) > MAX_JSON_DEPTH) {
    throw invalid("Invalid request body", {
      formErrors: [`JSON nested deeper than ${MAX_JSON_DEPTH} levels`],
      fieldErrors: {},
    });
  }
  const parsed = schema.safeParse(body.value);
  if (!parsed.success) throw invalid("Invalid request body", z.flattenError(parsed.error));
  return parsed.data;
}

/** Query parameters validated by `schema`: 400 `Invalid query parameters` otherwise. */
export function readQuery<T extends ZodType>(c: Context, schema: T): z.output<T> {
  return parseQuery(schema, c.req.query());
}

/** `readQuery` for parameters already taken from the URL. */
export function parseQuery<T extends ZodType>(
  schema: T,
  params: Record<string, string>,
): z.output<T> {
  const parsed = schema.safeParse(params);
  if (!parsed.success) throw invalid("Invalid query parameters", z.flattenError(parsed.error));
  return parsed.data;
}

/** The `:id` path parameter, which must be a UUID. */
export function readId(c: Context, what: "note" | "tag"): string {
  const id = c.req.param("id") ?? "";
  if (!Uuid.safeParse(id).success) throw new HttpError(400, `Invalid ${what} id`);
  return id.toLowerCase();
}

function invalid(message: string, details: unknown): HttpError {
  return new HttpError(400, message, undefined, { details });
}

/** How deeply a parsed JSON value nests, measured without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (typeof current !== "object" || current === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}
