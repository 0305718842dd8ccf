import type { MiddlewareHandler } from "hono";
import { type AuthOptions, authenticateHeaders, failureHeaders } from "./authenticate.ts";
import { calledUrlOf, publicBaseOf } from "./called-url.ts";
import { toVerifier, type Verifier, type VerifierOptions } from "./create-verifier.ts";
import type { Agent } from "./result.ts";

/** The variables the middleware sets on the Hono context. */
export type AgentPassVariables = { agentpassEmail: string; agentpassAgent?: Agent };

/**
 * Hono middleware: authenticates the session token (`x-session-token`, `Authorization: Bearer`,
 * or `Authorization: DPoP` with its `DPoP` proof, which AgentPass checks against this request's
 * method and URL) through AgentPass and sets `c.var.agentpassEmail`, or answers 400 (two
 * different tokens) / 401 / 503 with `{ error, code }` (401 with its challenge, 503 with
 * `Retry-After`). Behind a proxy, `options.publicUrl` names your public base URL, which proofs
 * are made for.
 *
 * @example
 * import { createVerifier } from "@agentpass/verify";
 * import { agentPassAuth } from "@agentpass/verify/hono";
 * const app = new Hono<{ Variables: AgentPassVariables }>();
 * const verifier = createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY! });
 * app.use("/api/*", agentPassAuth(verifier, { publicUrl: "https://api.example.com" }));
 * app.get("/api/me", (c) => c.json({ email: c.var.agentpassEmail }));
 */
export function agentPassAuth(
  verifierOrOptions: Verifier | VerifierOptions = {},
  options: AuthOptions = {},
): MiddlewareHandler<{ Variables: AgentPassVariables }> {
  const verifier = toVerifier(verifierOrOptions);
  const base = publicBaseOf(options.publicUrl);
  return async (c, next) => {
    const auth = await authenticateHeaders(verifier, {
      header: (name) => c.req.header(name),
      method: c.req.method,
      url: () => calledUrlOf(base, c.req.url),
    });
    if (!auth.ok) {
      return c.json(
        { error: auth.error, code: auth.code },
        auth.status,
        failureHeaders(auth.status, auth.code, auth.error, options.agentAuthChallenge),
      );
    }
    c.set("agentpassEmail", auth.email);
    if (auth.agent) c.set("agentpassAgent", auth.agent);
    await next();
  };
}

export type { AuthOptions, Verifier, VerifierOptions };
