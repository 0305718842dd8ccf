import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { agentAuth } from "@better-auth/agent-auth";
import { betterAuth } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { toNodeHandler } from "better-auth/node";

/** The capabilities the scenario's provider offers (at AgentPass, a partner declares them). */
export const SCENARIO_CAPABILITIES = [
  {
    name: "list_notes",
    description: "Read notes",
    input: {
      type: "object",
      properties: { limit: { type: "integer", minimum: 1, maximum: 100 } },
    },
  },
  {
    name: "create_note",
    description: "Write a note",
    input: { type: "object", required: ["title"], properties: { title: { type: "string" } } },
  },
] as const;

/**
 * The Agent Auth Protocol's reference server, `@better-auth/agent-auth` on `better-auth`, on
 * loopback with a SQLite file of its own (`file`): what AgentPass's answers are compared with.
 * Two instances on one file are one service behind a load balancer. A person signs up with a
 * password and approves an agent's code through the reference's own approval endpoint.
 */
export async function startReference(file: string) {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const auth = betterAuth({
    baseURL: origin,
    secret: "reference-agent-auth-secret-for-tests-only-0123456789",
    database: new DatabaseSync(file),
    emailAndPassword: { enabled: true },
    logger: { disabled: true },
    plugins: [
      agentAuth({
        providerName: "reference",
        providerDescription: "The reference server",
        allowDynamicHostRegistration: true,
        modes: ["delegated"],
        approvalMethods: ["device_authorization"],
        capabilities: [...SCENARIO_CAPABILITIES],
        onExecute: async () => ({ notes: [] }),
      }),
    ],
  });
  const { runMigrations } = await getMigrations(auth.options);
  await runMigrations();
  const handler = toNodeHandler(auth);
  server.on("request", (request, response) => {
    if (request.url === "/.well-known/agent-configuration") {
      request.url = "/api/auth/agent-configuration";
    }
    void handler(request, response);
  });
  const base = `${origin}/api/auth`;

  return {
    origin,
    discovery: `${origin}/.well-known/agent-configuration`,
    /** Signs a person up: the session cookie their browser would hold. */
    async person(email: string): Promise<string> {
      const response = await fetch(`${base}/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ email, password: "correct horse battery", name: "Person" }),
      });
      if (!response.ok) throw new Error(`sign-up: ${response.status} ${await response.text()}`);
      return response.headers
        .getSetCookie()
        .map((cookie) => cookie.split(";")[0])
        .join("; ");
    },
    /** The person approves (or denies) the agent's code, as the reference's page would. */
    async decide(cookie: string, agentId: string, userCode: string, approve = true) {
      const response = await fetch(`${base}/agent/approve-capability`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie, origin },
        body: JSON.stringify({
          agent_id: agentId,
          user_code: userCode,
          action: approve ? "approve" : "deny",
        }),
      });
      return response.status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Reference = Awaited<ReturnType<typeof startReference>>;
