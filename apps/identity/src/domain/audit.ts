import type { Logger } from "pino";
import type { AuditFilter, AuditStore, StoredAuditEvent } from "../store/audit-store.ts";
import type { Clock } from "./clock.ts";

/** What happened. Dotted names: the kind of thing, then what was done to it. */
export type AuditAction =
  | "sign_in"
  | "sign_out"
  | "sign_out_everywhere"
  | "user_key.create"
  | "user_key.rename"
  | "user_key.revoke"
  | "partner_key.create"
  | "partner_key.rename"
  | "partner_key.revoke"
  | "consent.approve"
  | "consent.deny"
  | "grant.create"
  | "grant.revoke"
  | "device_login.approve"
  | "device_login.deny"
  | "partner.create"
  | "partner.update"
  | "partner.verify_site"
  | "partner.delete"
  | "partner.suspend"
  | "partner.reinstate"
  | "partner_resource.add"
  | "partner_resource.remove"
  | "account.create"
  | "account.delete"
  | "account.export"
  | "sealing_key.rotate"
  | "sealing_key.rewrap";

/** `locked_out`: the failure that used up a sign-in code's tries. */
export type AuditOutcome = "success" | "failure" | "locked_out";

/**
 * Who acted: a signed-in person, an OAuth client (by its client id: whoever holds its code or
 * token), the operator through `agentpass-server`, or the service.
 */
export type AuditActor =
  | { kind: "account"; id: string }
  | { kind: "client"; id: string }
  | { kind: "admin" }
  | { kind: "service" };

/** Where a request came from; absent for the admin CLI. */
export interface AuditClient {
  address: string | null;
  userAgent: string | null;
}

/**
 * A security event as its recorder knows it. Never a secret: a key, a code, a token or a link
 * has no field here, and `detail` holds names and counts only.
 */
export interface AuditEvent {
  action: AuditAction;
  outcome: AuditOutcome;
  actor: AuditActor;
  /** The account the event concerns, whose owner sees it on their page; null: none. */
  accountId: string | null;
  subject?: { kind: string; id: string | null };
  client?: AuditClient;
  detail?: Record<string, string | number | boolean | null>;
}

/** A user agent is kept to this many characters: enough to name a browser. */
export const MAX_USER_AGENT_LENGTH = 200;

export interface AuditTrail {
  /**
   * Writes the event as one JSON log line and stores it. A failed store is logged, not thrown:
   * the action it records has already happened, and its log line holds it.
   */
  record(event: AuditEvent): Promise<void>;
  /** Stored events, newest first. */
  list(filter: AuditFilter): Promise<StoredAuditEvent[]>;
}

/** The audit trail over `store`, logging to `logger` at `info`, timed by `clock`. */
export function createAuditTrail(store: AuditStore, logger: Logger, clock: Clock): AuditTrail {
  return {
    async record(event) {
      const stored = {
        at: clock(),
        action: event.action,
        outcome: event.outcome,
        actorKind: event.actor.kind,
        actorId: "id" in event.actor ? event.actor.id : null,
        accountId: event.accountId,
        subjectKind: event.subject?.kind ?? null,
        subjectId: event.subject?.id ?? null,
        clientAddress: event.client?.address ?? null,
        userAgent: event.client?.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) ?? null,
        detail: event.detail ?? null,
      };
      logger.info({ audit: stored }, `audit ${stored.action} ${stored.outcome}`);
      try {
        await store.insertAuditEvent(stored);
      } catch (error) {
        logger.error({ err: error, audit: stored }, "could not store an audit event");
      }
    },
    list: (filter) => store.listAuditEvents(filter),
  };
}
