import type { EndpointRequest } from "@agentpass/http";
import type { AuditEvent } from "../../domain/audit.ts";

/** Where a page's request came from, for the audit log: the client address and user agent. */
export function clientOf(
  request: Pick<EndpointRequest, "clientAddress" | "header">,
): NonNullable<AuditEvent["client"]> {
  return { address: request.clientAddress(), userAgent: request.header("user-agent") ?? null };
}

/** The actor, account and client of an event a signed-in person caused on their own account. */
export function byPerson(request: EndpointRequest, accountId: string) {
  return {
    actor: { kind: "account", id: accountId },
    accountId,
    client: clientOf(request),
  } as const;
}
