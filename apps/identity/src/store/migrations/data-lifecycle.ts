import type { Engine } from "@agentpass/db";
import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";
import { createSqliteChangeTriggers } from "./key-change-triggers.ts";

/**
 * Migration 0015: what the data lifecycle needs (`store/purge.ts`, `store/account-store.ts`).
 * - A partner the operator suspends (`partners.suspended_at`) has its keys refused as revoked
 *   until it is reinstated. The mark is copied onto each of its keys (`partner_keys.suspended_at`)
 *   so that the change goes through the key change log like a revocation, and every instance
 *   drops its cached reads of those keys on the next request. SQLite's update trigger names the
 *   columns it watches, so it is made again with the new one; PostgreSQL's watches every column.
 * - The serving instances, each with a check value of its secret (`store/instance-store.ts`):
 *   `sealing-keys rotate` refuses while one runs under another secret.
 * - A partner's resource URLs (no foreign key since 0008) go with it, by a trigger: every way a
 *   partner is deleted frees them (its owner, the admin CLI, its owner's account deleted).
 * - An index for each retention purge (usage by day, activity and revoked keys by time) and for
 *   an account's deletion (the rows that name it by its email).
 * Expand only: the release before ignores the new columns (its instances do not refuse a
 * suspended partner's keys) and never reads the indexes.
 */
export async function prepareDataLifecycle(db: AnyDb, engine: Engine): Promise<void> {
  // The key tables' change triggers are deferred to commit: an earlier migration of the same
  // run that wrote their rows (0011) leaves events pending, and PostgreSQL alters or indexes no
  // table with pending trigger events. Fired now, they list those changes as at commit.
  if (engine === "postgres") await sql`SET CONSTRAINTS ALL IMMEDIATE`.execute(db);
  await sql`ALTER TABLE partners ADD COLUMN suspended_at bigint`.execute(db);
  await sql`ALTER TABLE partner_keys ADD COLUMN suspended_at bigint`.execute(db);
  if (engine === "sqlite") {
    await sql`DROP TRIGGER partner_keys_update_change`.execute(db);
    await createSqliteChangeTriggers(db, "partner_keys", ["update"]);
  }
  await sql`CREATE TABLE instances (
    id text PRIMARY KEY,
    secret_check text NOT NULL,
    started_at bigint NOT NULL,
    seen_at bigint NOT NULL
  )`.execute(db);
  if (engine === "sqlite") {
    await sql`CREATE TRIGGER partners_free_resources AFTER DELETE ON partners BEGIN
      DELETE FROM partner_resources WHERE partner_id = OLD.id;
    END`.execute(db);
  } else {
    await sql`CREATE FUNCTION free_partner_resources() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM partner_resources WHERE partner_id = OLD.id;
        RETURN NULL;
      END
    $$`.execute(db);
    await sql`CREATE TRIGGER partners_free_resources AFTER DELETE ON partners
      FOR EACH ROW EXECUTE FUNCTION free_partner_resources()`.execute(db);
  }
  const indexes = [
    sql`CREATE INDEX instances_seen ON instances (seen_at)`,
    sql`CREATE INDEX usage_daily_day ON usage_daily (day)`,
    sql`CREATE INDEX partner_activity_last ON partner_activity (last_at)`,
    sql`CREATE INDEX departed_partner_activity_last ON departed_partner_activity (last_at)`,
    sql`CREATE INDEX user_keys_revoked ON user_keys (revoked_at) WHERE revoked_at IS NOT NULL`,
    sql`CREATE INDEX partner_keys_revoked ON partner_keys (revoked_at)
      WHERE revoked_at IS NOT NULL`,
    sql`CREATE INDEX remembered_browsers_email ON remembered_browsers (email)`,
    sql`CREATE INDEX sign_in_codes_email ON sign_in_codes (email)`,
    sql`CREATE INDEX oauth_codes_account ON oauth_codes (account_id)`,
  ];
  for (const index of indexes) await index.execute(db);
  if (engine === "postgres") await sql`SET CONSTRAINTS ALL DEFERRED`.execute(db);
}
