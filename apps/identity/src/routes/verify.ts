import { Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import { HttpError, readBearer, readJsonBody, unauthorized } from "../http-error.ts";
import { verifySessionToken } from "../session-tokens.ts";

export const VerifyRequest = z.object({ sessionToken: z.string().min(1) });
export const VerifyResponse = z.object({ email: z.string() });
export const TOKEN_EXPIRES_HEADER = "AgentPass-Token-Expires-At";

const MESSAGES = {
  INVALID_PARTNER_KEY: unauthorized("Invalid partner key"),
  REVOKED_PARTNER_KEY: new HttpError(403, "Partner key has been revoked"),
  INVALID_SESSION_TOKEN: unauthorized("Invalid or expired session token"),
} as const;

/**
 * POST /api/verify — spec sections 4.1 and 7, to the letter. Checked in this order:
 * Authorization header → body is JSON → sessionToken → partner key → session token.
 */
export function verifyRoutes(ctx: IdentityContext) {
  return new Hono().post("/api/verify", async (c) => {
    const bearer = readBearer(c.req.header("authorization"));
    if (bearer.kind === "missing") throw unauthorized("Missing or invalid partner key");
    if (bearer.kind === "empty") throw unauthorized("Missing partner key");
    const body = await readJsonBody(c);
    if (!body.ok) throw new HttpError(400, "Invalid JSON body");
    const request = VerifyRequest.safeParse(body.value);
    if (!request.success) throw new HttpError(400, "Missing or invalid sessionToken");

    const result = await verifySessionToken(ctx, bearer.value, request.data.sessionToken);
    if (!result.ok) throw MESSAGES[result.code];
    return c.json({ email: result.email }, 200, {
      "Cache-Control": "no-store",
      [TOKEN_EXPIRES_HEADER]: new Date(result.expiresAt).toISOString(),
    });
  });
}
