import { HttpError, readHeader } from "@agentpass/http";
import {
  authenticate,
  canonicalizeEmail,
  failureHeaders,
  SESSION_TOKEN_HEADER,
} from "@agentpass/verify";
import type { MiddlewareHandler } from "hono";
import type { NotesContext, NotesEnv } from "../context.ts";
import type { User } from "../store/store.ts";

const NO_ACCOUNT = new HttpError(401, "No account for this user", failureHeaders(401));
// An agent that sent its token as `Authorization: Bearer` is told where it goes instead.
const BEARER_HINT = { hint: `Send the session token in the ${SESSION_TOKEN_HEADER} header` };

/**
 * Every notes and tags call: the session token is verified through AgentPass (the client
 * library, with a short cache of successes), and the email it names must be a local user.
 * AgentPass down or refusing our own partner key is a 503, never a 401 and never a pass.
 */
export function requireUser(ctx: NotesContext): MiddlewareHandler<NotesEnv> {
  return async (c, next) => {
    c.set(
      "user",
      await authenticateUser(
        ctx,
        readHeader(c, SESSION_TOKEN_HEADER),
        readHeader(c, "authorization"),
      ),
    );
    await next();
  };
}

/** The local user behind a session token; throws the `HttpError` to answer otherwise. */
export async function authenticateUser(
  ctx: NotesContext,
  sessionToken: string | undefined,
  authorization?: string,
): Promise<User> {
  return localUser(ctx, await authenticatedEmail(ctx, sessionToken, authorization));
}

/**
 * The canonical email AgentPass vouches for behind a session token (not yet matched to a local
 * user); throws the `HttpError` to answer otherwise.
 */
export async function authenticatedEmail(
  ctx: NotesContext,
  sessionToken: string | undefined,
  authorization?: string,
): Promise<string> {
  const auth = await authenticate(ctx.verifier, sessionToken ?? null);
  if (!auth.ok) {
    const hint = !sessionToken && authorization?.startsWith("Bearer ") ? BEARER_HINT : undefined;
    throw new HttpError(auth.status, auth.error, failureHeaders(auth.status), hint);
  }
  const email = canonicalFormOf(auth.email);
  if (email === null) throw NO_ACCOUNT;
  return email;
}

const MAX_CANONICAL_FORMS = 10_000;
let canonicalForms = new Map<string, string | null>();

/**
 * `canonicalizeEmail` remembered per address (a pure function, ~1 µs a call, on every notes
 * request): AgentPass answers in that form already, so this is a check that costs a lookup.
 */
function canonicalFormOf(email: string): string | null {
  let canonical = canonicalForms.get(email);
  if (canonical === undefined) {
    const result = canonicalizeEmail(email);
    canonical = result.ok ? result.email : null;
    if (canonicalForms.size >= MAX_CANONICAL_FORMS) canonicalForms = new Map();
    canonicalForms.set(email, canonical);
  }
  return canonical;
}

/** The local user with a canonical `email`; throws 401 when there is none. */
export async function localUser(ctx: NotesContext, email: string): Promise<User> {
  const user = await ctx.store.findUserByEmail(email);
  if (!user) throw NO_ACCOUNT;
  return user;
}
