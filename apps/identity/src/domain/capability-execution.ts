import type { Needs } from "../context.ts";
import type { Constraints } from "../store/capability-store.ts";
import { type AgentAuthRefusal, type AgentJwtVerdict, judgeAgentJwt, refusal } from "./agents.ts";
import { type Violation, violationsOf } from "./capabilities.ts";
import { compile } from "./json-schemas.ts";

export type Authorization =
  | (Extract<AgentJwtVerdict, { ok: true }> & { constraints: Constraints | null })
  | (AgentAuthRefusal & { violations?: Violation[] });

/**
 * What a partner's location asks before it executes (section 5.11, checked centrally): the
 * capability is this partner's (else 404 `capability_not_found`), the agent's JWT is valid with
 * `aud` the capability's location exactly (each JWT once), the JWT's `capabilities` claim (if
 * any) names it, the agent holds an active grant of it (403 `capability_not_granted`), the
 * arguments fit its input schema (400 `invalid_request`) and the grant's constraints (403
 * `constraint_violated`, with the violations).
 */
export async function authorizeExecution(
  ctx: Parameters<typeof judgeAgentJwt>[0] & Needs<"capabilities">,
  partnerId: string,
  token: string,
  name: string,
  args: Record<string, unknown>,
): Promise<Authorization> {
  const capability = await ctx.capabilities.find(name);
  if (!capability || capability.partnerId !== partnerId) {
    return refusal(404, "capability_not_found", `You offer no capability ${name}`);
  }
  const verdict = await judgeAgentJwt(ctx, token, (aud) => aud === capability.location);
  if (!verdict.ok) return verdict;
  const limited = verdict.claims.capabilities;
  const grant = (await ctx.capabilities.grantsOf(verdict.agent.id)).find(
    (held) => held.capability === name && held.status === "active",
  );
  if (!grant || (Array.isArray(limited) && !limited.includes(name))) {
    return refusal(403, "capability_not_granted", `The agent holds no grant of ${name}`);
  }
  if (capability.input) {
    const validate = compile(capability.input);
    if (typeof validate === "string") throw new Error(`stored schema of ${name}: ${validate}`);
    const fits = validate(args);
    if (fits !== true) return refusal(400, "invalid_request", `Invalid arguments: ${fits}`);
  }
  const violations = grant.constraints ? violationsOf(grant.constraints, args) : [];
  if (violations.length > 0) {
    return {
      ...refusal(403, "constraint_violated", "The arguments are outside the agent's grant"),
      violations,
    };
  }
  return { ...verdict, constraints: grant.constraints };
}
