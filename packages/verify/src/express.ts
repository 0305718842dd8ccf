import { authenticateHeaders, failureHeaders } from "./authenticate.ts";
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
 * Express / Connect middleware: authenticates the session token (`x-session-token` or
 * `Authorization: Bearer`) through AgentPass and sets `req.agentpassEmail`, or answers 400 (two
 * different tokens) / 401 / 503 with JSON `{ error, code }` (401 with its challenge, 503 with
 * `Retry-After`).
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
    const header = (name: string) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    authenticateHeaders(verifier, header).then(
      (auth) => {
        if (auth.ok) {
          req.agentpassEmail = auth.email;
          next();
          return;
        }
        res.statusCode = auth.status;
        res.setHeader("Content-Type", "application/json");
        for (const [name, value] of Object.entries(failureHeaders(auth.status, auth.code))) {
          res.setHeader(name, value);
        }
        res.end(JSON.stringify({ error: auth.error, code: auth.code }));
      },
      (error: unknown) => next(error),
    );
  };
}

export type { Verifier, VerifierOptions };
