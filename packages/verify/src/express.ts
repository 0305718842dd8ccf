import {
  type AuthOptions,
  authenticateHeaders,
  failureHeaders,
  type IncomingRequest,
} from "./authenticate.ts";
import { calledUrl, publicBaseOf } from "./called-url.ts";
import { toVerifier, type Verifier, type VerifierOptions } from "./create-verifier.ts";
import type { Agent } from "./result.ts";

/** The parts of a Node request the middleware reads and sets (Express and Connect alike). */
export interface AgentPassRequest {
  headers: Record<string, string | string[] | undefined>;
  method?: string | undefined;
  /** The path and query, as Node's `IncomingMessage` has it (below a mount point in Express). */
  url?: string | undefined;
  /** The whole path and query, mount point included (Express and Connect). */
  originalUrl?: string | undefined;
  /** `http` or `https` as Express tells it (with its `trust proxy` setting). */
  protocol?: string | undefined;
  /** The connection, a TLS one (`encrypted`) when served over https by Node itself. */
  socket?: unknown;
  agentpassEmail?: string;
  /** The agent acting for the person, when the token names one (issue 54). */
  agentpassAgent?: Agent;
}

// With Express's own types installed, `req.agentpassEmail` is typed in every handler after the
// middleware (under `tsc --strict`); without them this only declares an empty namespace.
declare global {
  namespace Express {
    interface Request {
      /** The verified email of the person whose agent sent the request, set by `agentPassAuth`. */
      agentpassEmail?: string;
      /** The agent acting for that person, when its token names one, set by `agentPassAuth`. */
      agentpassAgent?: Agent;
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
 * Express / Connect middleware: authenticates the session token (`x-session-token`,
 * `Authorization: Bearer`, or `Authorization: DPoP` with its `DPoP` proof, which AgentPass checks
 * against this request's method and URL) through AgentPass and sets `req.agentpassEmail`, or
 * answers 400 (two different tokens) / 401 / 503 with JSON `{ error, code }` (401 with its
 * challenge, 503 with `Retry-After`). Behind a proxy, `options.publicUrl` names your public base
 * URL, which proofs are made for.
 *
 * @example
 * import { createVerifier } from "@agentpass/verify";
 * import { agentPassAuth } from "@agentpass/verify/express";
 * const verifier = createVerifier({ partnerKey: process.env.AGENTPASS_PARTNER_KEY! });
 * app.use("/api", agentPassAuth(verifier, { publicUrl: "https://api.example.com" }));
 * app.get("/api/me", (req, res) => res.json({ email: req.agentpassEmail }));
 */
export function agentPassAuth(
  verifierOrOptions: Verifier | VerifierOptions = {},
  options: AuthOptions = {},
) {
  const verifier = toVerifier(verifierOrOptions);
  const base = publicBaseOf(options.publicUrl);
  return (req: AgentPassRequest, res: AgentPassResponse, next: (error?: unknown) => void): void => {
    authenticateHeaders(verifier, incomingRequest(req, base)).then(
      (auth) => {
        if (auth.ok) {
          req.agentpassEmail = auth.email;
          if (auth.agent) req.agentpassAgent = auth.agent;
          next();
          return;
        }
        res.statusCode = auth.status;
        res.setHeader("Content-Type", "application/json");
        const headers = failureHeaders(
          auth.status,
          auth.code,
          auth.error,
          options.agentAuthChallenge,
        );
        for (const [name, value] of Object.entries(headers)) {
          res.setHeader(name, value);
        }
        res.end(JSON.stringify({ error: auth.error, code: auth.code }));
      },
      (error: unknown) => next(error),
    );
  };
}

/** A Node request as `authenticateHeaders` reads it; its URL is `base` (or its own) and its path. */
function incomingRequest(req: AgentPassRequest, base: string | undefined): IncomingRequest {
  const header = (name: string) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  return {
    header,
    method: req.method ?? "GET",
    url: () => calledUrl(base ?? `${schemeOf(req)}://${header("host")}`, pathOf(req)),
  };
}

function schemeOf(req: AgentPassRequest): string {
  if (req.protocol) return req.protocol;
  return (req.socket as { encrypted?: boolean } | undefined)?.encrypted ? "https" : "http";
}

function pathOf(req: AgentPassRequest): string {
  return req.originalUrl ?? req.url ?? "/";
}

export type { AuthOptions, Verifier, VerifierOptions };
