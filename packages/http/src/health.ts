import { z } from "zod";
import { defineEndpoint, type Endpoint } from "./endpoint.ts";

const Health = z.object({ ok: z.boolean() });
const Readiness = z.object({
  ok: z.boolean(),
  database: z.boolean(),
  /** Why an instance whose database answers cannot do its job (`shutting_down`, …). */
  reason: z.string().optional(),
});

/** A 503 a load balancer retries elsewhere, and checks again after. */
const NOT_READY = { status: 503, headers: { "Retry-After": "5" } } as const;

/**
 * Liveness (`/healthz`: the process answers) and readiness (`/readyz`): `check` (a query of the
 * database) succeeds, and `notReady` names no reason the instance cannot do its job. The
 * reasons are each service's: `shutting_down` (SIGTERM came, the server drains) for both,
 * `sealing_key_unwrap_failed` for the identity service, `partner_key_*` for the notes API.
 */
export function healthEndpoints(
  check: () => Promise<unknown>,
  notReady: () => string | null | Promise<string | null>,
): Endpoint[] {
  return [
    defineEndpoint({
      method: "GET",
      path: "/healthz",
      operation: {
        operationId: "liveness",
        description:
          "Answers 200 while the process serves; checks nothing else, for a container's liveness probe.",
        tags: ["Health"],
        summary: "Liveness: the process answers",
        security: [],
        responses: {
          "200": { description: "Up", content: { "application/json": { schema: Health } } },
        },
      },
      handle: () => ({ status: 200, body: { ok: true } }),
    }),
    defineEndpoint({
      method: "GET",
      path: "/readyz",
      operation: {
        operationId: "readiness",
        description:
          "200 when the database answers and the instance can do its job; 503 with the reason otherwise (shutting down, the partner key refused, …), for a load balancer's readiness probe.",
        tags: ["Health"],
        summary: "Readiness: the database answers and the instance can do its job",
        security: [],
        responses: {
          "200": { description: "Ready", content: { "application/json": { schema: Readiness } } },
        },
      },
      async handle() {
        try {
          await check();
        } catch {
          return { ...NOT_READY, body: { ok: false, database: false } };
        }
        const reason = await notReady();
        if (reason === null) return { status: 200, body: { ok: true, database: true } };
        return { ...NOT_READY, body: { ok: false, database: true, reason } };
      },
    }),
  ];
}
