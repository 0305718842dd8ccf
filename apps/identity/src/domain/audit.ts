import { rateLimitKey } from "@agentpass/http";
import type { Logger } from "pino";
import type {
  AuditFilter,
  AuditStore,
  NewAuditEvent,
  StoredAuditEvent,
} from "../store/audit-store.ts";
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
  | "agent.register"
  | "agent.approve"
  | "agent.deny"
  | "agent.revoke"
  | "agent.reactivate"
  | "agent.rotate_key"
  | "host.revoke"
  | "host.rotate_key"
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
type AuditOutcome = "success" | "failure" | "locked_out";

/**
 * Who acted: a signed-in person, an OAuth client (by its client id: whoever holds its code or
 * token), the operator through `agentpass-server` (by the operator name it was given), or the
 * service.
 */
type AuditActor =
  | { kind: "account"; id: string }
  | { kind: "client"; id: string }
  | { kind: "admin"; id: string }
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
const MAX_USER_AGENT_LENGTH = 200;

/** Repeats of a refusal within this long of its first occurrence fold into its row. */
export const AUDIT_FOLD_WINDOW_MS = 15 * 60_000;
/** Folded repeats are written at most this often: one UPDATE per row, however many repeats. */
export const AUDIT_FOLD_FLUSH_MS = 1_000;
/**
 * The networks whose refusals about one account (or about none) get rows of their own in a
 * window; the repeats of any further network fold into one row "from several networks", so
 * rotating addresses cannot buy rows either.
 */
export const AUDIT_FOLD_NETWORKS = 5;

export interface AuditTrail {
  /**
   * Writes the event as one JSON log line and stores it. A failed store is logged, not thrown:
   * the action it records has already happened, and its log line holds it.
   *
   * A refusal the service made of a request that proved nobody (actor `service`, outcome not
   * `success`: a wrong sign-in code, a sign-in without an open code) is what anyone outside can
   * cause as often as they like, so its repeats fold: the same action, outcome, account, reason
   * and network (`rateLimitKey` of the address) within `AUDIT_FOLD_WINDOW_MS` of the first are
   * counted on the first's row, in memory, and written as one UPDATE at most every
   * `AUDIT_FOLD_FLUSH_MS` with one log line. A flood costs a bounded number of rows and writes.
   * Every other event (what a signed-in person, a client or the operator did) is a row each.
   */
  record(event: AuditEvent): Promise<void>;
  /** Stored events, newest first, the repeats counted so far included. */
  list(filter: AuditFilter): Promise<StoredAuditEvent[]>;
  /** Writes the repeats counted in memory; the service calls it as it stops. */
  flush(): Promise<void>;
}

/** A row standing for repeats: its id once stored (null: it could not be), and what is unwritten. */
interface Fold {
  id: Promise<number | null>;
  event: NewAuditEvent;
  until: number;
  repeats: number;
  lastAt: number;
}

/** The audit trail over `store`, logging to `logger` at `info`, timed by `clock`. */
export function createAuditTrail(store: AuditStore, logger: Logger, clock: Clock): AuditTrail {
  /** Folds by what they are about (action, outcome, account, reason), then by network. */
  const folds = new Map<string, Map<string, Fold>>();
  let flushing: NodeJS.Timeout | undefined;

  async function insert(stored: NewAuditEvent): Promise<number | null> {
    logger.info({ audit: stored }, `audit ${stored.action} ${stored.outcome}`);
    try {
      return await store.insertAuditEvent(stored);
    } catch (error) {
      logger.error({ err: error, audit: stored }, "could not store an audit event");
      return null;
    }
  }

  async function fold(stored: NewAuditEvent): Promise<void> {
    const about = [stored.action, stored.outcome, stored.accountId, stored.detail?.reason];
    const aboutKey = JSON.stringify(about);
    const byNetwork = folds.get(aboutKey) ?? new Map<string, Fold>();
    folds.set(aboutKey, byNetwork);
    for (const [key, open] of byNetwork) if (open.until <= stored.at) byNetwork.delete(key);
    let network = stored.clientAddress === null ? "" : rateLimitKey(stored.clientAddress);
    let event = stored;
    if (!byNetwork.has(network) && byNetwork.size >= AUDIT_FOLD_NETWORKS) {
      network = "*";
      event = { ...stored, clientAddress: null, userAgent: null };
      event.detail = { ...stored.detail, fromSeveralNetworks: true };
    }
    const open = byNetwork.get(network);
    // The timer runs while any fold is open, so a fold nobody repeats is still dropped when its
    // window ends: memory holds one window's refusals at most.
    flushing ??= setInterval(() => void flush(), AUDIT_FOLD_FLUSH_MS).unref();
    if (open) {
      open.repeats += 1;
      open.lastAt = stored.at;
      return;
    }
    const id = insert(event);
    byNetwork.set(network, {
      id,
      event,
      until: stored.at + AUDIT_FOLD_WINDOW_MS,
      repeats: 0,
      lastAt: stored.at,
    });
    await id;
  }

  async function flush(): Promise<void> {
    const now = clock();
    const writes: Promise<void>[] = [];
    for (const [aboutKey, byNetwork] of folds) {
      for (const [network, open] of byNetwork) {
        if (open.repeats > 0) writes.push(writeRepeats(open, open.repeats));
        open.repeats = 0;
        if (open.until <= now) byNetwork.delete(network);
      }
      if (byNetwork.size === 0) folds.delete(aboutKey);
    }
    if (folds.size === 0 && flushing) {
      clearInterval(flushing);
      flushing = undefined;
    }
    await Promise.all(writes);
  }

  async function writeRepeats(open: Fold, repeats: number): Promise<void> {
    const { event, lastAt } = open;
    logger.info(
      { audit: { ...event, repeats, lastAt } },
      `audit ${event.action} ${event.outcome} repeated ${repeats} times`,
    );
    const id = await open.id;
    if (id === null) return;
    try {
      await store.addAuditRepeats(id, repeats, lastAt);
    } catch (error) {
      logger.error({ err: error, audit: event, repeats }, "could not store an audit event");
    }
  }

  return {
    async record(event) {
      const stored: NewAuditEvent = {
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
      const anonymous = event.actor.kind === "service" && event.outcome !== "success";
      if (anonymous) await fold(stored);
      else await insert(stored);
    },
    async list(filter) {
      await flush();
      return store.listAuditEvents(filter);
    },
    flush,
  };
}
