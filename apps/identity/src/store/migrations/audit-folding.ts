import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0016: an audit row can stand for repeats of one refusal (`domain/audit.ts`): how
 * many times it happened, `at` being the first and `last_at` the last (null: once). A stranger's
 * flood of failed sign-ins then costs one row per address and account in a window, not a row
 * per request. Expand only: the release before neither reads nor writes the columns, and a row
 * it stores counts once.
 */
export async function foldAuditRepeats(db: AnyDb): Promise<void> {
  await sql`ALTER TABLE audit_events ADD COLUMN occurrences integer NOT NULL DEFAULT 1`.execute(db);
  await sql`ALTER TABLE audit_events ADD COLUMN last_at bigint`.execute(db);
}
