import { type EndpointRequest, HttpError } from "@agentpass/http";
import {
  authenticate,
  canonicalizeEmail,
  failureHeaders,
  SESSION_TOKEN_HEADER,
} from "@agentpass/verify";
import type { NotesContext } from "../context.ts";
import { ERRORS } from "../errors.ts";
import type { User } from "../store/store.ts";

const NO_ACCOUNT = new HttpError(ERRORS.no_account, { headers: failureHeaders(401) });
// An agent that sent its token as `Authorization: Bearer` is told where it goes instead.
const BEARER_HINT = { hint: `Send the session token in the ${SESSION_TOKEN_HEADER} header` };

/**
 * The local user behind a request's session token, verified through AgentPass (the client
 * library, with a short cache of successes); throws the `HttpError` to answer otherwise.
 * AgentPass down or refusing our own partner key is a 503, never a 401 and never a pass.
 */
export async function authenticateUser(ctx: NotesContext, request: EndpointRequest): Promise<User> {
  const sessionToken = request.header(SESSION_TOKEN_HEADER);
  const auth = await authenticate(ctx.verifier, sessionToken ?? null);
  if (!auth.ok) {
    const authorization = request.header("authorization");
    const hint = !sessionToken && authorization?.startsWith("Bearer ") ? BEARER_HINT : undefined;
    throw new HttpError(ERRORS[auth.code], {
      headers: failureHeaders(auth.status),
      extra: hint,
    });
  }
  const email = canonicalFormOf(ctx, auth.email);
  const user = email === null ? undefined : await ctx.store.findUserByEmail(email);
  if (!user) throw NO_ACCOUNT;
  return user;
}

/**
 * `canonicalizeEmail`, remembered per address in the service's bounded cache: AgentPass answers
 * in that form already, so on every request this is a check that costs a lookup.
 */
function canonicalFormOf(ctx: NotesContext, email: string): string | null {
  let canonical = ctx.canonicalEmails.get(email);
  if (canonical === undefined) {
    const result = canonicalizeEmail(email);
    canonical = result.ok ? result.email : false;
    ctx.canonicalEmails.set(email, canonical);
  }
  return canonical === false ? null : canonical;
}
