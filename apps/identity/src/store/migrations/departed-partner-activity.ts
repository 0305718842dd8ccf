import type { Engine } from "@agentpass/db";
import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0010: a person's record that a partner learned their email outlives the partner: a
 * partner deleted (by its owner, or with its owner's account) leaves each person's row here,
 * with its name and website as they were. Copied by a trigger, so every way of deleting a
 * partner keeps it, the release before included; it only adds, so that release runs beside it.
 */
export async function keepDepartedPartnerActivity(db: AnyDb, engine: Engine): Promise<void> {
  await sql`CREATE TABLE departed_partner_activity (
    account_id text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    partner_id text NOT NULL,
    name text NOT NULL,
    website text,
    first_at bigint NOT NULL,
    last_at bigint NOT NULL,
    count bigint NOT NULL,
    deleted_at bigint NOT NULL,
    PRIMARY KEY (account_id, partner_id)
  )`.execute(db);
  // Rows of an account being deleted in the same statement (the partner's owner) are not
  // kept: the account is already gone when its partners' rows are deleted.
  const keep = (now: string) =>
    sql.raw(`INSERT INTO departed_partner_activity
      (account_id, partner_id, name, website, first_at, last_at, count, deleted_at)
    SELECT a.account_id, OLD.id, OLD.name, OLD.website, a.first_at, a.last_at, a.count, ${now}
    FROM partner_activity a
    WHERE a.partner_id = OLD.id
      AND EXISTS (SELECT 1 FROM accounts WHERE accounts.id = a.account_id);`);
  if (engine === "sqlite") {
    await sql`CREATE TRIGGER partners_keep_activity BEFORE DELETE ON partners BEGIN
      ${keep("CAST(unixepoch('subsec') * 1000 AS INTEGER)")}
    END`.execute(db);
    return;
  }
  await sql`CREATE FUNCTION keep_partner_activity() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      ${keep("(extract(epoch FROM clock_timestamp()) * 1000)::bigint")}
      RETURN OLD;
    END
  $$`.execute(db);
  await sql`CREATE TRIGGER partners_keep_activity BEFORE DELETE ON partners
    FOR EACH ROW EXECUTE FUNCTION keep_partner_activity()`.execute(db);
}
