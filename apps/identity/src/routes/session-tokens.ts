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
import { type RateLimiter, rateLimitHeaders, tooManyRequests } from "../rate-limit.ts";
import { mintSessionToken } from "../session-tokens.ts";

export const MintRequest = z.object({
  audience: z.uuid().nullish().describe("Partner id the token is bound to; omit for any partner"),
});
export const MintResponse = z.object({
  sessionToken: z.string().describe("Opaque token starting with aps_"),
  expiresAt: z.iso.datetime().describe("When the token stops verifying"),
});

const ERRORS = {
  MISSING_OR_INVALID_USER_KEY: unauthorized("Missing or invalid user key"),
  MISSING_USER_KEY: unauthorized("Missing user key"),
  INVALID_JSON_BODY: new HttpError(400, "Invalid JSON body"),
  INVALID_USER_KEY: unauthorized("Invalid user key"),
  REVOKED_USER_KEY: new HttpError(403, "User key has been revoked"),
  INVALID_AUDIENCE: new HttpError(400, "Invalid audience"),
} as const;

/**
 * POST /api/session-tokens — trades a user key (Bearer) for a session token. Checked in this
 * order: Authorization header → body is a JSON object (or empty) → user key (401 / 403) →
 * audience, so an unauthenticated caller learns nothing about which partners exist. Every mint
 * by a working key counts against that key (429 past the limit, RateLimit-* headers on every
 * counted answer); an unknown or revoked key counts against the client address.
 */
export function sessionTokenRoutes(
  ctx: IdentityContext,
  limits: { perUserKey: RateLimiter; badKeysPerIp: RateLimiter; clientIp: (c: Context) => string },
) {
  return new Hono().post("/api/session-tokens", async (c) => {
    const bearer = readBearer(readHeader(c, "authorization"));
    if (bearer.kind === "missing") return renderError(c, ERRORS.MISSING_OR_INVALID_USER_KEY);
    if (bearer.kind === "empty") return renderError(c, ERRORS.MISSING_USER_KEY);
    const body = await readJsonBody(c, MAX_BODY_BYTES);
    if (!body.ok && !body.empty) return renderError(c, ERRORS.INVALID_JSON_BODY);
    const fields = body.ok ? body.value : {};
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      return renderError(c, ERRORS.INVALID_JSON_BODY);
    }
    const audience = (fields as { audience?: unknown }).audience ?? null;

    const result = await mintSessionToken(ctx, bearer.value, audience, limits.perUserKey);
    if (result.ok) {
      return c.json(
        { sessionToken: result.sessionToken, expiresAt: new Date(result.expiresAt).toISOString() },
        201,
        { "Cache-Control": "no-store", ...rateLimitHeaders(result.limit) },
      );
    }
    if (result.code === "RATE_LIMITED") return renderError(c, tooManyRequests(result.limit));
    if (result.code === "INVALID_USER_KEY" || result.code === "REVOKED_USER_KEY") {
      const limited = await limits.badKeysPerIp.take(limits.clientIp(c));
      if (!limited.ok) return renderError(c, tooManyRequests(limited));
    }
    return renderError(c, ERRORS[result.code]);
  });
}
