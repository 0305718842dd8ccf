import {
  HttpError,
  readBearer,
  readHeader,
  readJsonBody,
  renderError,
  unauthorized,
} from "@agentpass/http";
import { Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import { MAX_BODY_BYTES } from "../limits.ts";
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

/**
 * POST /api/verify — spec sections 4.1 and 7, to the letter. Checked in this order:
 * Authorization header → body is JSON → sessionToken → partner key → session token.
 */
export function verifyRoutes(ctx: IdentityContext) {
  return new Hono().post("/api/verify", async (c) => {
    const bearer = readBearer(readHeader(c, "authorization"));
    if (bearer.kind === "missing") return renderError(c, ERRORS.MISSING_OR_INVALID_PARTNER_KEY);
    if (bearer.kind === "empty") return renderError(c, ERRORS.MISSING_PARTNER_KEY);
    const body = await readJsonBody(c, MAX_BODY_BYTES);
    if (!body.ok) return renderError(c, ERRORS.INVALID_JSON_BODY);
    const request = VerifyRequest.safeParse(body.value);
    if (!request.success) return renderError(c, ERRORS.INVALID_SESSION_TOKEN_FIELD);

    const result = await verifySessionToken(ctx, bearer.value, request.data.sessionToken);
    if (!result.ok) return renderError(c, ERRORS[result.code]);
    return c.json({ email: result.email }, 200, {
      "Cache-Control": "no-store",
      [TOKEN_EXPIRES_HEADER]: new Date(result.expiresAt).toISOString(),
    });
  });
}
