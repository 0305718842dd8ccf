import { Ajv, type ErrorObject } from "ajv";

/**
 * A schema compiled to a check answering true or what failed, or why it cannot be compiled.
 * A partner's `pattern` is refused: AgentPass runs no partner's regular expression (one could
 * take seconds on a crafted argument); the location checks patterns itself. Formats are notes.
 * One instance for the process holds nothing between calls: each schema is removed once
 * compiled, so it is no cache a revocation could outlive.
 */
const ajv = new Ajv({
  strict: false,
  validateFormats: false,
  allErrors: false,
  code: { regExp: Object.assign(refusedPattern, { code: "refusedPattern" }) },
});

function refusedPattern(): never {
  throw new Error("pattern and patternProperties are not supported");
}

export function compile(schema: object): ((value: unknown) => true | string) | string {
  try {
    if (!ajv.validateSchema(schema)) return ajv.errorsText(ajv.errors);
    const validate = ajv.compile(schema);
    // Compiled once per call, not kept: a schema object is new each time, so Ajv's own cache
    // would only grow.
    ajv.removeSchema(schema);
    return (value) => validate(value) || describe(validate.errors);
  } catch (error) {
    ajv.removeSchema(schema);
    return error instanceof Error ? error.message : "it cannot be compiled";
  }
}

function describe(errors: ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  return first
    ? `${first.instancePath || "arguments"} ${first.message ?? "is invalid"}`
    : "invalid";
}
