import {
  HttpError,
  isoTime,
  type JsonBody,
  readBearer,
  readHeader,
  readJsonBody,
  renderError,
  unauthorized,
} from "@agentpass/http";
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import { MAX_BODY_BYTES } from "../limits.ts";
import { type RateLimiter, tooManyRequests } from "../rate-limit.ts";
import { verifySessionToken } from "../session-tokens.ts";

export const VerifyRequest = z.object({ sessionToken: z.string().min(1) });
export const VerifyResponse = z.object({ email: z.string() });
export const TOKEN_EXPIRES_HEADER = "AgentPass-Token-Expires-At";

const ERRORS = {
  MISSING_OR_INVALID_PARTNER_KEY: unauthorized("Missing or invalid partner key"),
  MISSING_PARTNER_KEY: unauthorized("Missing partner key"),
  INVALID_JSON_BODY: new HttpError(400, "Invalid JSON body"),
  INVALID_SESSION_TOKEN_FIELD: new HttpError(400, "Missing or invalid sessionToken"),
  INVALID_PARTNER_KEY: unauthorized("Invalid partner key"),
  REVOKED_PARTNER_KEY: new HttpError(403, "Partner key has been revoked"),
  INVALID_SESSION_TOKEN: unauthorized("Invalid or expired session token"),
} as const;

export interface VerifyLimits {
  /** Failed verifications (bad session tokens) per partner key. */
  perPartnerKey: RateLimiter;
  /** Unknown or revoked keys per client address. */
  badKeysPerIp: RateLimiter;
}

/** A verify request as any HTTP layer hands it over; the body is read only when needed. */
export interface VerifyInput {
  authorization: string | undefined;
  readBody: () => Promise<JsonBody>;
  clientIp: () => string;
}

export interface Verified {
  email: string;
  expiresAt: number;
}

/**
 * POST /api/verify — spec sections 4.1 and 7, to the letter. Checked in this order:
 * Authorization header → body is JSON → sessionToken → partner key → session token.
 * Only failures are counted, so a success costs no write: a bad session token against the
 * partner key, an unknown or revoked partner key against the client address. Past the limit the
 * failure's answer becomes 429 (DESIGN.md section 8).
 *
 * Framework-free, so the same function answers through Hono and through the plain `node:http`
 * fast path in front of it (`fast-paths.ts`).
 */
export async function verifyRequest(
  ctx: IdentityContext,
  limits: VerifyLimits,
  input: VerifyInput,
): Promise<Verified | HttpError> {
  const bearer = readBearer(input.authorization);
  if (bearer.kind === "missing") return ERRORS.MISSING_OR_INVALID_PARTNER_KEY;
  if (bearer.kind === "empty") return ERRORS.MISSING_PARTNER_KEY;
  const body = await input.readBody();
  if (!body.ok) return ERRORS.INVALID_JSON_BODY;
  const sessionToken = sessionTokenOf(body.value);
  if (sessionToken === undefined) return ERRORS.INVALID_SESSION_TOKEN_FIELD;

  const result = await verifySessionToken(ctx, bearer.value, sessionToken);
  if (result.ok) return result;
  const limited =
    result.code === "INVALID_SESSION_TOKEN"
      ? await limits.perPartnerKey.take(result.partnerKeyId)
      : await limits.badKeysPerIp.take(input.clientIp());
  return limited.ok ? ERRORS[result.code] : tooManyRequests(limited);
}

/** The headers of a 200: never cached by a proxy; the partner may cache until the expiry. */
export function verifiedHeaders(verified: Verified): Record<string, string> {
  return {
    "Cache-Control": "no-store",
    [TOKEN_EXPIRES_HEADER]: isoTime(verified.expiresAt),
  };
}

/** What `VerifyRequest` accepts (a JSON object with a non-empty string `sessionToken`), without
 * a schema walk on the hot path. */
function sessionTokenOf(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const token = (value as { sessionToken?: unknown }).sessionToken;
  return typeof token === "string" && token !== "" ? token : undefined;
}

/** The Hono route, for everything that does not come through the fast path (and `app.request`). */
export function verifyRoutes(
  ctx: IdentityContext,
  limits: VerifyLimits & { clientIp: (c: Context) => string },
) {
  return new Hono().post("/api/verify", async (c) => {
    const answer = await verifyRequest(ctx, limits, {
      authorization: readHeader(c, "authorization"),
      readBody: () => readJsonBody(c, MAX_BODY_BYTES),
      clientIp: () => limits.clientIp(c),
    });
    if (answer instanceof HttpError) return renderError(c, answer);
    return c.json({ email: answer.email }, 200, verifiedHeaders(answer));
  });
}
