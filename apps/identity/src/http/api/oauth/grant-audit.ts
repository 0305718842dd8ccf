import type { Needs } from "../../../context.ts";
import type { AuditClient, AuditEvent } from "../../../domain/audit.ts";
import type { GrantSummary, RevokedCredential } from "../../../domain/grants.ts";

/**
 * The audit events of the OAuth endpoints: the grants the token endpoint makes, and the ones a
 * client or the service ends. These endpoints authenticate no person: the actor is the client
 * whose code or token was presented. An event names a grant by its id, never by a token.
 */

/** Why the service ended a grant by itself. */
type GrantEndReason =
  /** Its authorization code was presented again: stolen or replayed (RFC 6749 section 4.1.2). */
  | "code_reused"
  /** A replaced refresh token was presented again: copied, or replayed (RFC 9700 section 4.14). */
  | "refresh_token_reused"
  /** A device login's answer never reached the device: its key is taken back. */
  | "undelivered";

/** A grant the token endpoint made, exchanging a code or an approved device login. */
export function recordGrantCreated(
  ctx: Needs<"audit">,
  client: AuditClient,
  grant: GrantSummary,
): Promise<void> {
  return ctx.audit.record({
    ...aboutGrant(grant),
    action: "grant.create",
    outcome: "success",
    actor: { kind: "client", id: grant.clientId },
    client,
  });
}

/**
 * What RFC 7009 revoked: a grant, by its client; a user key made by hand, by its account (a
 * user key acts as its account, whoever holds it).
 */
export function recordTokenRevoked(
  ctx: Needs<"audit">,
  client: AuditClient,
  revoked: RevokedCredential,
): Promise<void> {
  if (revoked.kind === "grant") {
    return ctx.audit.record({
      ...aboutGrant(revoked.grant),
      action: "grant.revoke",
      outcome: "success",
      actor: { kind: "client", id: revoked.grant.clientId },
      client,
    });
  }
  return ctx.audit.record({
    action: "user_key.revoke",
    outcome: "success",
    actor: { kind: "account", id: revoked.accountId },
    accountId: revoked.accountId,
    subject: { kind: "user_key", id: revoked.id },
    client,
    detail: { name: revoked.name },
  });
}

/** A grant the service ended by itself; `client` is the request that made it do so. */
export function recordGrantEnded(
  ctx: Needs<"audit">,
  client: AuditClient,
  grant: GrantSummary,
  reason: GrantEndReason,
): Promise<void> {
  const about = aboutGrant(grant);
  return ctx.audit.record({
    ...about,
    action: "grant.revoke",
    outcome: "success",
    actor: { kind: "service" },
    client,
    detail: { ...about.detail, reason },
  });
}

/** The account, subject and names of a grant's event, as the dashboard's revoke records them. */
function aboutGrant(grant: GrantSummary) {
  return {
    accountId: grant.accountId,
    subject: { kind: "grant", id: grant.id },
    detail: { clientId: grant.clientId, clientName: grant.clientName },
  } satisfies Partial<AuditEvent>;
}
