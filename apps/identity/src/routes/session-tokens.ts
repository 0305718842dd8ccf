import { Hono } from "hono";
import { z } from "zod";
import type { IdentityContext } from "../context.ts";
import { HttpError, readBearer, readJsonBody, unauthorized } from "../http-error.ts";
import { mintSessionToken } from "../session-tokens.ts";

export const MintRequest = z.object({
  audience: z.uuid().nullish().describe("Partner id the token is bound to; omit for any partner"),
});
export const MintResponse = z.object({
  sessionToken: z.string().describe("Opaque token starting with aps_"),
  expiresAt: z.iso.datetime().describe("When the token stops verifying"),
});

const MESSAGES = {
  INVALID_USER_KEY: unauthorized("Invalid user key"),
  REVOKED_USER_KEY: new HttpError(403, "User key has been revoked"),
  INVALID_AUDIENCE: new HttpError(400, "Invalid audience"),
} as const;

/**
 * POST /api/session-tokens — trades a user key (Bearer) for a session token. Checked in this
 * order: Authorization header → body is a JSON object (or empty) → user key (401 / 403) →
 * audience, so an unauthenticated caller learns nothing about which partners exist.
 */
export function sessionTokenRoutes(ctx: IdentityContext) {
  return new Hono().post("/api/session-tokens", async (c) => {
    const bearer = readBearer(c.req.header("authorization"));
    if (bearer.kind === "missing") throw unauthorized("Missing or invalid user key");
    if (bearer.kind === "empty") throw unauthorized("Missing user key");
    const body = await readJsonBody(c);
    if (!body.ok && !body.empty) throw new HttpError(400, "Invalid JSON body");
    const fields = body.ok ? body.value : {};
    if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
      throw new HttpError(400, "Invalid JSON body");
    }
    const audience = (fields as { audience?: unknown }).audience ?? null;

    const result = await mintSessionToken(ctx, bearer.value, audience);
    if (!result.ok) throw MESSAGES[result.code];
    return c.json(
      { sessionToken: result.sessionToken, expiresAt: new Date(result.expiresAt).toISOString() },
      201,
      { "Cache-Control": "no-store" },
    );
  });
}
