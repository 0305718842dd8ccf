import { authenticate, failureHeaders, SESSION_TOKEN_HEADER } from "./authenticate.ts";
import { toVerifier, type Verifier, type VerifierOptions } from "./create-verifier.ts";

/** The parts of a Node request the middleware reads and sets (Express and Connect alike). */
export interface AgentPassRequest {
  headers: Record<string, string | string[] | undefined>;
  agentpassEmail?: string;
}

// With Express's own types installed, `req.agentpassEmail` is typed in every handler after the
// middleware (under `tsc --strict`); without them this only declares an empty namespace.
declare global {
  namespace Express {
    interface Request {
      /** The verified email of the person whose agent sent the request, set by `agentPassAuth`. */
      agentpassEmail?: string;
    }
  }
}

/** The parts of a Node response the middleware writes. */
export interface AgentPassResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/**
 * Express / Connect middleware: authenticates `x-session-token` through AgentPass and sets
 * `req.agentpassEmail`, or answers 401 / 503 with JSON `{ error }` (503 with `Retry-After`).
 *
 * @example
 * import { createVerifier } from "@agentpass/verify";
 * import { agentPassAuth } from "@agentpass/verify/express";
 * app.use("/api", agentPassAuth(createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY! })));
 * app.get("/api/me", (req, res) => res.json({ email: req.agentpassEmail }));
 */
export function agentPassAuth(verifierOrOptions: Verifier | VerifierOptions = {}) {
  const verifier = toVerifier(verifierOrOptions);
  return (req: AgentPassRequest, res: AgentPassResponse, next: (error?: unknown) => void): void => {
    const header = req.headers[SESSION_TOKEN_HEADER];
    authenticate(verifier, Array.isArray(header) ? header[0] : header).then(
      (auth) => {
        if (auth.ok) {
          req.agentpassEmail = auth.email;
          next();
          return;
        }
        res.statusCode = auth.status;
        res.setHeader("Content-Type", "application/json");
        for (const [name, value] of Object.entries(failureHeaders(auth.status))) {
          res.setHeader(name, value);
        }
        res.end(JSON.stringify({ error: auth.error, code: auth.code }));
      },
      (error: unknown) => next(error),
    );
  };
}

export type { Verifier, VerifierOptions };
