import { defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";

const Health = z.object({ ok: z.boolean() });
const Readiness = z.object({ ok: z.boolean(), database: z.boolean() });

/** Liveness (the process answers) and readiness (`ping`, a query of its database, answers too). */
export function healthEndpoints(ping: () => Promise<unknown>): Endpoint[] {
  return [
    defineEndpoint({
      method: "GET",
      path: "/healthz",
      operation: {
        operationId: "liveness",
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
        summary: "Readiness: the database answers",
        security: [],
        responses: {
          "200": { description: "Ready", content: { "application/json": { schema: Readiness } } },
        },
      },
      async handle() {
        try {
          await ping();
          return { status: 200, body: { ok: true, database: true } };
        } catch {
          return {
            status: 503,
            body: { ok: false, database: false },
            headers: { "Retry-After": "5" },
          };
        }
      },
    }),
  ];
}
