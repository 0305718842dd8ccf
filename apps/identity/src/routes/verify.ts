import {
  HttpError,
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
  clientIp: (c: Context) => string;
}

/**
 * POST /api/verify — spec sections 4.1 and 7, to the letter. Checked in this order:
 * Authorization header → body is JSON → sessionToken → partner key → session token.
 * Only failures are counted, so a success costs no write: a bad session token against the
 * partner key, an unknown or revoked partner key against the client address. Past the limit the
 * failure's answer becomes 429 (DESIGN.md section 8).
 */
export function verifyRoutes(ctx: IdentityContext, limits: VerifyLimits) {
  return new Hono().post("/api/verify", async (c) => {
    const bearer = readBearer(readHeader(c, "authorization"));
    if (bearer.kind === "missing") return renderError(c, ERRORS.MISSING_OR_INVALID_PARTNER_KEY);
    if (bearer.kind === "empty") return renderError(c, ERRORS.MISSING_PARTNER_KEY);
    const body = await readJsonBody(c, MAX_BODY_BYTES);
    if (!body.ok) return renderError(c, ERRORS.INVALID_JSON_BODY);
    const request = VerifyRequest.safeParse(body.value);
    if (!request.success) return renderError(c, ERRORS.INVALID_SESSION_TOKEN_FIELD);

    const result = await verifySessionToken(ctx, bearer.value, request.data.sessionToken);
    if (!result.ok) {
      const limited =
        result.code === "INVALID_SESSION_TOKEN"
          ? await limits.perPartnerKey.take(result.partnerKeyId)
          : await limits.badKeysPerIp.take(limits.clientIp(c));
      if (!limited.ok) return renderError(c, tooManyRequests(limited));
      return renderError(c, ERRORS[result.code]);
    }
    return c.json({ email: result.email }, 200, {
      "Cache-Control": "no-store",
      [TOKEN_EXPIRES_HEADER]: new Date(result.expiresAt).toISOString(),
    });
  });
}
