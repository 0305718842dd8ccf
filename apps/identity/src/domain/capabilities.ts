import type { Needs } from "../context.ts";
import type { CapabilityRecord, Constraints, RequestedGrant } from "../store/capability-store.ts";
import { type AgentAuthRefusal, originOf, refusal } from "./agents.ts";
import { compile } from "./json-schemas.ts";

/**
 * Capabilities (Agent Auth Protocol sections 2.12–2.15): partners declare what agents may do at
 * their own locations, with JSON Schema inputs; an agent asks for grants, optionally narrowed by
 * constraints; its person approves them at `/device`. AgentPass executes nothing itself: the
 * partner's location asks it (`authorizeExecution`) whether this agent may run this capability
 * with these arguments, and AgentPass answers as section 5.11 has the location answer.
 */

const CAPABILITY_NAME = /^[a-z0-9_]{1,64}$/;
/** The operators of section 2.13; any other is refused, never ignored. */
const OPERATORS = new Set(["max", "min", "in", "not_in"]);
/** The largest schema a capability may declare, as JSON. */
const MAX_SCHEMA_CHARS = 8192;

export interface CapabilityDeclaration {
  name: string;
  description: string;
  location: string;
  input?: Record<string, unknown> | undefined;
  output?: Record<string, unknown> | undefined;
}

type CapabilitiesCtx = Needs<"capabilities" | "oauth" | "clock">;

/**
 * Makes `declared` the partner's whole set of capabilities. Each location is at one of the
 * partner's resource URLs (by origin): agents sign their JWTs for it, and only that partner
 * may ask about them. Schemas are compiled here, so an execution never meets a broken one.
 */
export async function declareCapabilities(
  ctx: CapabilitiesCtx,
  partnerId: string,
  declared: CapabilityDeclaration[],
): Promise<{ ok: true; capabilities: CapabilityRecord[] } | { ok: false; message: string }> {
  const origins = new Set((await ctx.oauth.resourcesOf(partnerId)).map(originOf));
  const names = new Set<string>();
  for (const capability of declared) {
    const problem = problemOf(capability, origins);
    if (problem) return { ok: false, message: `${capability.name}: ${problem}` };
    if (names.has(capability.name)) {
      return { ok: false, message: `${capability.name}: declared twice` };
    }
    names.add(capability.name);
  }
  const at = ctx.clock();
  const stored = await ctx.capabilities.declare(
    partnerId,
    declared.map((capability) => ({
      name: capability.name,
      partner_id: partnerId,
      description: capability.description,
      location: capability.location,
      input_schema: capability.input ? JSON.stringify(capability.input) : null,
      output_schema: capability.output ? JSON.stringify(capability.output) : null,
      updated_at: at,
    })),
  );
  if (!stored.ok) {
    return { ok: false, message: `Another partner offers ${stored.taken.join(", ")}` };
  }
  return { ok: true, capabilities: await ctx.capabilities.ofPartner(partnerId) };
}

function problemOf(capability: CapabilityDeclaration, origins: Set<string | null>) {
  if (!CAPABILITY_NAME.test(capability.name)) return "a name is 1 to 64 of [a-z0-9_]";
  const origin = originOf(capability.location);
  if (origin === null || !origins.has(origin) || capability.location.includes("#")) {
    return "location must be an absolute URL at one of your resource URLs, without a fragment";
  }
  for (const [part, schema] of [
    ["input", capability.input],
    ["output", capability.output],
  ] as const) {
    if (schema === undefined) continue;
    if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
      return `${part} is over ${MAX_SCHEMA_CHARS} characters of JSON`;
    }
    const compiled = compile(schema);
    if (typeof compiled === "string") return `${part} is not a usable JSON Schema: ${compiled}`;
  }
  if (capability.input && capability.input.type !== "object") {
    return 'input must be a schema of an object ("type": "object")';
  }
  return null;
}

/**
 * The grants an agent asks for (sections 5.3, 5.4): each a capability name, or `{ name,
 * constraints }`. Refused whole: an unknown capability (400 `invalid_capabilities`, naming
 * them), an operator section 2.13 does not define (400 `unknown_constraint_operator`), or a
 * constraint on an argument the capability does not take.
 */
export async function readRequestedGrants(
  ctx: Needs<"capabilities">,
  wanted: unknown[],
): Promise<{ ok: true; grants: RequestedGrant[] } | AgentAuthRefusal> {
  const grants: RequestedGrant[] = [];
  const unknown: string[] = [];
  for (const item of wanted) {
    const name = typeof item === "string" ? item : (item as { name?: unknown } | null)?.name;
    if (typeof name !== "string") {
      return refusal(400, "invalid_request", "Each capability is a name or { name, constraints }");
    }
    const capability = await ctx.capabilities.find(name);
    if (!capability) {
      unknown.push(name);
      continue;
    }
    if (grants.some((grant) => grant.capability === name)) {
      return refusal(400, "invalid_request", `${name} is asked for twice`);
    }
    const proposed =
      typeof item === "string" ? undefined : (item as { constraints?: unknown }).constraints;
    const constraints = readConstraints(capability, proposed);
    if ("ok" in constraints) return constraints;
    grants.push({ capability: name, constraints: constraints.value });
  }
  if (unknown.length > 0) {
    return {
      ...refusal(400, "invalid_capabilities", `No partner offers ${unknown.join(", ")}`),
      invalid_capabilities: unknown,
    } as AgentAuthRefusal;
  }
  return { ok: true, grants };
}

function readConstraints(
  capability: CapabilityRecord,
  proposed: unknown,
): { value: Constraints | null } | AgentAuthRefusal {
  if (proposed === undefined || proposed === null) return { value: null };
  if (typeof proposed !== "object" || Array.isArray(proposed)) {
    return refusal(400, "invalid_request", "constraints must be an object");
  }
  const fields = Object.keys((capability.input?.properties as object | undefined) ?? {});
  const unknownOperators: string[] = [];
  for (const [field, constraint] of Object.entries(proposed)) {
    if (!fields.includes(field)) {
      return refusal(400, "invalid_request", `${capability.name} takes no argument ${field}`);
    }
    if (isPrimitive(constraint)) continue;
    if (!constraint || typeof constraint !== "object" || Array.isArray(constraint)) {
      return refusal(
        400,
        "invalid_request",
        `The constraint on ${field} is not a value or operators`,
      );
    }
    const operators = Object.entries(constraint);
    if (operators.length === 0) return refusal(400, "invalid_request", `${field} has no operator`);
    for (const [operator, operand] of operators) {
      if (!OPERATORS.has(operator)) unknownOperators.push(operator);
      else if (!operandFits(operator, operand)) {
        return refusal(
          400,
          "invalid_request",
          `${field}: ${operator} takes ${operandKind(operator)}`,
        );
      }
    }
  }
  if (unknownOperators.length > 0) {
    return {
      ...refusal(
        400,
        "unknown_constraint_operator",
        `Unknown operators: ${unknownOperators.join(", ")}`,
      ),
      unknown_operators: unknownOperators,
    } as AgentAuthRefusal;
  }
  return { value: proposed as Constraints };
}

function operandFits(operator: string, operand: unknown): boolean {
  return operator === "max" || operator === "min"
    ? typeof operand === "number" && Number.isFinite(operand)
    : Array.isArray(operand) && operand.length <= 100 && operand.every(isPrimitive);
}

function operandKind(operator: string): string {
  return operator === "max" || operator === "min" ? "a number" : "an array of values";
}

export interface Violation {
  field: string;
  constraint: Record<string, unknown>;
  actual: unknown;
}

/**
 * Section 2.13: each argument a constraint names, against it. An exact value must be equal;
 * `max`/`min` need a number within; `in` a listed value, `not_in` none of them.
 */
export function violationsOf(constraints: Constraints, args: Record<string, unknown>): Violation[] {
  const violations: Violation[] = [];
  for (const [field, constraint] of Object.entries(constraints)) {
    const actual = args[field];
    if (isPrimitive(constraint)) {
      if (actual !== constraint) violations.push({ field, constraint: { eq: constraint }, actual });
      continue;
    }
    for (const [operator, operand] of Object.entries(constraint as Record<string, unknown>)) {
      if (!holds(operator, operand, actual)) {
        violations.push({ field, constraint: { [operator]: operand }, actual });
      }
    }
  }
  return violations;
}

function holds(operator: string, operand: unknown, actual: unknown): boolean {
  switch (operator) {
    case "max":
      return typeof actual === "number" && actual <= (operand as number);
    case "min":
      return typeof actual === "number" && actual >= (operand as number);
    case "in":
      return isPrimitive(actual) && (operand as unknown[]).includes(actual);
    default:
      return !(isPrimitive(actual) && (operand as unknown[]).includes(actual));
  }
}

export function isPrimitive(value: unknown): value is string | number | boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}
