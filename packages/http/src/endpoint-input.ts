import type { ZodError } from "zod";
import {
  type Answer,
  type Endpoint,
  type EndpointInput,
  type EndpointRequest,
  type InputFailure,
  MAX_JSON_DEPTH,
} from "./endpoint.ts";
import type { HttpError } from "./http-error.ts";

const FORM = "application/x-www-form-urlencoded";

/**
 * An endpoint's answer to a request: its `admit`, then its input parsed by the schemas it
 * documents (refused with its own `refuseInput`), then its handler with the parsed input.
 */
export async function serveEndpoint(
  definition: Endpoint,
  request: EndpointRequest,
): Promise<Answer | HttpError> {
  let admitted: unknown;
  if (definition.admit) {
    const admission = await definition.admit(request);
    if (!admission.ok) return admission.answer;
    admitted = admission.admitted;
  }
  if (!definition.input) {
    return definition.handle(request, {
      params: undefined,
      query: undefined,
      body: undefined,
      admitted,
    });
  }
  const parsed = await parseEndpointInput(definition.input, request);
  // `checkInputDeclared` holds every endpoint that takes input to a `refuseInput`.
  if (!parsed.ok) return definition.refuseInput?.(parsed.failure) as Answer | HttpError;
  const { params, query, body } = parsed;
  return definition.handle(request, { params, query, body, admitted });
}

/**
 * Holds every endpoint to the input it documents: a path with `{name}` segments names `params`,
 * and an endpoint that takes input says how it refuses input its schemas do not take.
 */
export function checkInputDeclared(definition: Endpoint, names: string[]): void {
  const where = `${definition.method} ${definition.path}`;
  if (names.length > 0 && !definition.input?.params) {
    throw new Error(`${where} has path parameters but no input.params schema`);
  }
  if (definition.input && !definition.refuseInput) {
    throw new Error(`${where} takes input but has no refuseInput`);
  }
}

export type InputResult =
  | { ok: true; params: unknown; query: unknown; body: unknown }
  | { ok: false; failure: InputFailure };

/**
 * A request's path parameters, query and body, each parsed by the schema its endpoint
 * documents, in that order; the first that fails is the failure. A part the endpoint does not
 * document is not read: its handler gets `undefined`.
 */
export async function parseEndpointInput(
  input: EndpointInput,
  request: EndpointRequest,
): Promise<InputResult> {
  let params: unknown;
  let query: unknown;
  let body: unknown;
  if (input.params) {
    const parsed = input.params.safeParse(request.params);
    if (!parsed.success) return schemaFailure("params", parsed.error);
    params = parsed.data;
  }
  if (input.query) {
    const parsed = input.query.safeParse(firstValues(request.query));
    if (!parsed.success) return schemaFailure("query", parsed.error);
    query = parsed.data;
  }
  if (input.body) {
    const read = await readBodyFields(input, request);
    if (!read.ok) return read;
    const parsed = input.body.safeParse(read.value);
    if (!parsed.success) return schemaFailure("body", parsed.error);
    body = parsed.data;
  }
  return { ok: true, params, query, body };
}

function schemaFailure(part: "params" | "query" | "body", error: ZodError) {
  return { ok: false as const, failure: { part, problem: "schema" as const, error } };
}

function bodyFailure(problem: "not_json" | "not_form" | "too_deep") {
  return { ok: false as const, failure: { part: "body" as const, problem } };
}

/** Each parameter's first value: a repeated parameter is not a list to any schema here. */
function firstValues(entries: Iterable<[string, string]>): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of entries) if (!Object.hasOwn(fields, name)) fields[name] = value;
  return fields;
}

/** The body as the fields its schema reads: JSON, or a form's fields, by the endpoint's encoding. */
async function readBodyFields(
  input: EndpointInput,
  request: EndpointRequest,
): Promise<{ ok: true; value: unknown } | { ok: false; failure: InputFailure }> {
  const encoding = input.encoding ?? "json";
  const type = (request.header("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (encoding === "form" || (encoding === "json or form" && type === FORM)) {
    if (type !== FORM) return bodyFailure("not_form");
    // Text that is not UTF-8 holds no field.
    const text = (await request.readText()) ?? "";
    const fields: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(text)) {
      if (Object.hasOwn(fields, name)) {
        return { ok: false, failure: { part: "body", problem: "repeated", field: name } };
      }
      fields[name] = value;
    }
    return { ok: true, value: fields };
  }
  const body = await request.readJson();
  if (!body.ok) {
    return body.empty && input.bodyRequired === false
      ? { ok: true, value: {} }
      : bodyFailure("not_json");
  }
  if (depthOf(body.value) > MAX_JSON_DEPTH) return bodyFailure("too_deep");
  return { ok: true, value: body.value };
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
