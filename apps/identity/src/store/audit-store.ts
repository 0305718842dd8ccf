import type { ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import type { IdentityDatabase } from "./schema.ts";

/** One stored security event, decoded by name. */
export interface StoredAuditEvent {
  /** Counts up in the order events are stored. */
  id: number;
  at: number;
  action: string;
  outcome: string;
  actorKind: string;
  actorId: string | null;
  accountId: string | null;
  subjectKind: string | null;
  subjectId: string | null;
  clientAddress: string | null;
  userAgent: string | null;
  detail: Record<string, unknown> | null;
  /** How many times it happened: repeats of a refusal fold into one row (`domain/audit.ts`). */
  occurrences: number;
  /** When it last happened, when more than once; `at` is the first time. */
  lastAt: number | null;
}

export type NewAuditEvent = Omit<StoredAuditEvent, "id" | "occurrences" | "lastAt">;

/** Which events to list: all given filters hold; newest first, at most `limit`. */
export interface AuditFilter {
  accountId?: string;
  action?: string;
  /** Epoch ms, inclusive. */
  since?: number;
  /** Epoch ms, exclusive. */
  until?: number;
  /** Only events stored before the one with this id (the next page). */
  beforeId?: number;
  limit: number;
}

/** The audit log's rows: appended, counted up, listed, purged by `store/purge.ts`. */
export function createAuditStore(database: Pick<StoreDatabase<IdentityDatabase>, "db" | "write">) {
  const reads: ReadOnlyDb<IdentityDatabase> = database.db;
  return {
    /** Stores one event, happened once; answers its id. */
    async insertAuditEvent(event: NewAuditEvent): Promise<number> {
      const row = await database.write((db) =>
        db
          .insertInto("audit_events")
          .values({
            at: event.at,
            action: event.action,
            outcome: event.outcome,
            actor_kind: event.actorKind,
            actor_id: event.actorId,
            account_id: event.accountId,
            subject_kind: event.subjectKind,
            subject_id: event.subjectId,
            client_address: event.clientAddress,
            user_agent: event.userAgent,
            detail: event.detail === null ? null : JSON.stringify(event.detail),
          })
          .returning("id")
          .executeTakeFirstOrThrow(),
      );
      return Number(row.id);
    },

    /** Counts `repeats` more occurrences of the event `id`, the last at `lastAt`: one write. */
    async addAuditRepeats(id: number, repeats: number, lastAt: number): Promise<void> {
      await database.write((db) =>
        db
          .updateTable("audit_events")
          .set((eb) => ({ occurrences: eb("occurrences", "+", repeats), last_at: lastAt }))
          .where("id", "=", id)
          .execute(),
      );
    },

    async listAuditEvents(filter: AuditFilter): Promise<StoredAuditEvent[]> {
      let query = reads.selectFrom("audit_events").selectAll();
      if (filter.accountId !== undefined) query = query.where("account_id", "=", filter.accountId);
      if (filter.action !== undefined) query = query.where("action", "=", filter.action);
      if (filter.since !== undefined) query = query.where("at", ">=", filter.since);
      if (filter.until !== undefined) query = query.where("at", "<", filter.until);
      if (filter.beforeId !== undefined) query = query.where("id", "<", filter.beforeId);
      const rows = await query.orderBy("id", "desc").limit(filter.limit).execute();
      return rows.map((row) => ({
        id: Number(row.id),
        at: Number(row.at),
        action: row.action,
        outcome: row.outcome,
        actorKind: row.actor_kind,
        actorId: row.actor_id,
        accountId: row.account_id,
        subjectKind: row.subject_kind,
        subjectId: row.subject_id,
        clientAddress: row.client_address,
        userAgent: row.user_agent,
        detail: row.detail === null ? null : (JSON.parse(row.detail) as Record<string, unknown>),
        occurrences: Number(row.occurrences),
        lastAt: row.last_at === null ? null : Number(row.last_at),
      }));
    },
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;
