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

export interface MintLimits {
  /** Mints per working user key. */
  perUserKey: RateLimiter;
  /** Unknown or revoked keys per client address. */
  badKeysPerIp: RateLimiter;
}

/** A mint request as any HTTP layer hands it over; the body is read only when needed. */
export interface MintInput {
  authorization: string | undefined;
  readBody: () => Promise<JsonBody>;
  clientIp: () => string;
}

/** A 201's body and headers. */
export interface Minted {
  body: z.infer<typeof MintResponse>;
  headers: Record<string, string>;
}

/**
 * POST /api/session-tokens — trades a user key (Bearer) for a session token. Checked in this
 * order: Authorization header → body is a JSON object (or empty) → user key (401 / 403) →
 * audience, so an unauthenticated caller learns nothing about which partners exist. Every mint
 * by a working key counts against that key (429 past the limit, RateLimit-* headers on every
 * counted answer); an unknown or revoked key counts against the client address.
 *
 * Framework-free, so the same function answers through Hono and through the plain `node:http`
 * fast path in front of it (`fast-paths.ts`).
 */
export async function mintRequest(
  ctx: IdentityContext,
  limits: MintLimits,
  input: MintInput,
): Promise<Minted | HttpError> {
  const bearer = readBearer(input.authorization);
  if (bearer.kind === "missing") return ERRORS.MISSING_OR_INVALID_USER_KEY;
  if (bearer.kind === "empty") return ERRORS.MISSING_USER_KEY;
  const body = await input.readBody();
  if (!body.ok && !body.empty) return ERRORS.INVALID_JSON_BODY;
  const fields = body.ok ? body.value : {};
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    return ERRORS.INVALID_JSON_BODY;
  }
  const audience = (fields as { audience?: unknown }).audience ?? null;

  const result = await mintSessionToken(ctx, bearer.value, audience, limits.perUserKey);
  if (result.ok) {
    return {
      body: {
        sessionToken: result.sessionToken,
        expiresAt: isoTime(result.expiresAt),
      },
      headers: { "Cache-Control": "no-store", ...rateLimitHeaders(result.limit) },
    };
  }
  if (result.code === "RATE_LIMITED") return tooManyRequests(result.limit);
  if (result.code === "INVALID_USER_KEY" || result.code === "REVOKED_USER_KEY") {
    const limited = await limits.badKeysPerIp.take(input.clientIp());
    if (!limited.ok) return tooManyRequests(limited);
  }
  return ERRORS[result.code];
}

/** The Hono route, for everything that does not come through the fast path (and `app.request`). */
export function sessionTokenRoutes(
  ctx: IdentityContext,
  limits: MintLimits & { clientIp: (c: Context) => string },
) {
  return new Hono().post("/api/session-tokens", async (c) => {
    const answer = await mintRequest(ctx, limits, {
      authorization: readHeader(c, "authorization"),
      readBody: () => readJsonBody(c, MAX_BODY_BYTES),
      clientIp: () => limits.clientIp(c),
    });
    if (answer instanceof HttpError) return renderError(c, answer);
    return c.json(answer.body, 201, answer.headers);
  });
}
