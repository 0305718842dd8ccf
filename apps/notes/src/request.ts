import { type EndpointRequest, type ErrorDef, HttpError } from "@agentpass/http";
import { type ZodType, z } from "zod";
import { ERRORS } from "./errors.ts";
import { Uuid } from "./schemas.ts";

/** How deeply a JSON body may nest: schemas and presenters walk it recursively. */
export const MAX_JSON_DEPTH = 64;

/** The body as JSON, validated by `schema`: 400 `invalid_json_body` or `invalid_body` otherwise. */
export async function readBody<T extends ZodType>(
  request: EndpointRequest,
  schema: T,
): Promise<z.output<T>> {
  const body = await request.readJson();
  if (!body.ok) throw new HttpError(ERRORS.invalid_json_body);
  if (depthOf(body.value) > MAX_JSON_DEPTH) {
    throw invalid(ERRORS.invalid_body, {
      formErrors: [`JSON nested deeper than ${MAX_JSON_DEPTH} levels`],
      fieldErrors: {},
    });
  }
  const parsed = schema.safeParse(body.value);
  if (!parsed.success) throw invalid(ERRORS.invalid_body, z.flattenError(parsed.error));
  return parsed.data;
}

/**
 * The query validated by `schema` (the first value of a repeated parameter): 400
 * `invalid_query` otherwise.
 */
export function readQuery<T extends ZodType>(request: EndpointRequest, schema: T): z.output<T> {
  const params: Record<string, string> = {};
  for (const [name, value] of request.query) if (!Object.hasOwn(params, name)) params[name] = value;
  const parsed = schema.safeParse(params);
  if (!parsed.success) throw invalid(ERRORS.invalid_query, z.flattenError(parsed.error));
  return parsed.data;
}

/** The `{id}` path parameter, which must be a UUID. */
export function readId(request: EndpointRequest, what: "note" | "tag"): string {
  const id = request.params.id ?? "";
  if (!Uuid.safeParse(id).success) {
    throw new HttpError(what === "note" ? ERRORS.invalid_note_id : ERRORS.invalid_tag_id);
  }
  return id.toLowerCase();
}

function invalid(def: ErrorDef, details: unknown): HttpError {
  return new HttpError(def, { extra: { details } });
}

/** How deeply a parsed JSON value nests, measured without recursion. */
export function depthOf(value: unknown): number {
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
