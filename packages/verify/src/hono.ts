import type { MiddlewareHandler } from "hono";
import { authenticateHeaders, failureHeaders } from "./authenticate.ts";
import { toVerifier, type Verifier, type VerifierOptions } from "./create-verifier.ts";

/** The variables the middleware sets on the Hono context. */
export type AgentPassVariables = { agentpassEmail: string };

/**
 * Hono middleware: authenticates the session token (`x-session-token` or `Authorization:
 * Bearer`) through AgentPass and sets `c.var.agentpassEmail`, or answers 400 (two different
 * tokens) / 401 / 503 with `{ error, code }` (401 with its challenge, 503 with `Retry-After`).
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
    const auth = await authenticateHeaders(verifier, (name) => c.req.header(name));
    if (!auth.ok) {
      return c.json(
        { error: auth.error, code: auth.code },
        auth.status,
        failureHeaders(auth.status, auth.code),
      );
    }
    c.set("agentpassEmail", auth.email);
    await next();
  };
}

export type { Verifier, VerifierOptions };
