import type { MiddlewareHandler } from "hono";
import { authenticate, failureHeaders, SESSION_TOKEN_HEADER } from "./authenticate.ts";
import { toVerifier, type Verifier, type VerifierOptions } from "./create-verifier.ts";

/** The variables the middleware sets on the Hono context. */
export type AgentPassVariables = { agentpassEmail: string };

/**
 * Hono middleware: authenticates `x-session-token` through AgentPass and sets
 * `c.var.agentpassEmail`, or answers 401 / 503 with `{ error }` (503 with `Retry-After`).
 *
 * @example
 * import { createVerifier } from "@agentpass/verify";
 * import { agentPassAuth } from "@agentpass/verify/hono";
 * const app = new Hono<{ Variables: AgentPassVariables }>();
 * app.use("/api/*", agentPassAuth(createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY! })));
 * app.get("/api/me", (c) => c.json({ email: c.var.agentpassEmail }));
 */
export function agentPassAuth(
  verifierOrOptions: Verifier | VerifierOptions = {},
): MiddlewareHandler<{ Variables: AgentPassVariables }> {
  const verifier = toVerifier(verifierOrOptions);
  return async (c, next) => {
    const auth = await authenticate(verifier, c.req.header(SESSION_TOKEN_HEADER));
    if (!auth.ok) {
      return c.json(
        { error: auth.error, code: auth.code },
        auth.status,
        failureHeaders(auth.status),
      );
    }
    c.set("agentpassEmail", auth.email);
    await next();
  };
}

export type { Verifier, VerifierOptions };
