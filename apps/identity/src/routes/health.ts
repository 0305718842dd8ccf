import { Hono } from "hono";
import { sql } from "kysely";
import type { IdentityContext } from "../context.ts";

/** Liveness (the process answers) and readiness (the database answers too). */
export function healthRoutes(ctx: IdentityContext) {
  return new Hono()
    .get("/healthz", (c) => c.json({ ok: true }))
    .get("/readyz", async (c) => {
      try {
        await sql`SELECT 1`.execute(ctx.store.db);
        return c.json({ ok: true, database: true });
      } catch {
        return c.json({ ok: false, database: false }, 503);
      }
    });
}
