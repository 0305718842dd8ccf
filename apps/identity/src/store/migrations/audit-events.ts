import type { Engine } from "@agentpass/db";
import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0014: the audit log of security events (`domain/audit.ts`). `id` counts up in the
 * order events are stored, which is the order they are listed in. No foreign key to accounts:
 * an account's events outlive it until the retention purges them (`AUDIT_RETENTION_DAYS`).
 * Never a secret: names, ids, addresses and outcomes only.
 */
export async function createAuditEvents(db: AnyDb, engine: Engine): Promise<void> {
  const id =
    engine === "postgres"
      ? sql`id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`
      : sql`id integer PRIMARY KEY`;
  await sql`CREATE TABLE audit_events (
    ${id},
    at bigint NOT NULL,
    action text NOT NULL,
    outcome text NOT NULL,
    actor_kind text NOT NULL,
    actor_id text,
    account_id text,
    subject_kind text,
    subject_id text,
    client_address text,
    user_agent text,
    detail text
  )`.execute(db);
  // A person's page and `audit --account`: one account's events, newest first.
  await sql`CREATE INDEX audit_events_account ON audit_events (account_id, id)`.execute(db);
  // The retention purge and `audit --since`.
  await sql`CREATE INDEX audit_events_at ON audit_events (at)`.execute(db);
}
