import type { Engine } from "@agentpass/db";
import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Migration 0009: which keys changed, so that an instance drops those keys' cached reads instead
 * of all of them (store/key-changes.ts). Written by triggers, so a change made by any release,
 * the admin CLI or by hand is listed; it only adds, so the release before runs beside it.
 */
export async function createKeyChangeLog(db: AnyDb, engine: Engine): Promise<void> {
  if (engine === "sqlite") {
    await sql`CREATE TABLE key_epoch (
      id integer PRIMARY KEY CHECK (id = 1),
      value bigint NOT NULL
    )`.execute(db);
    await sql`INSERT INTO key_epoch (id, value) VALUES (1, 0)`.execute(db);
  }
  await sql`CREATE TABLE key_changes (
    epoch bigint PRIMARY KEY,
    table_name text NOT NULL,
    row_id text NOT NULL,
    secret_hash text,
    at bigint NOT NULL
  )`.execute(db);
  await sql`CREATE INDEX key_changes_at ON key_changes (at)`.execute(db);
  if (engine === "postgres") await keyChangesPostgres(db);
  else await keyChangesSqlite(db);
}

/**
 * PostgreSQL: `bump_key_epoch` (migration 0003, run by the key tables' deferred triggers at
 * commit) also lists each changed row in `key_changes` under the epoch its bump made. The bumps
 * of one transaction hold `key_epoch`'s row lock until it commits, so epochs follow the commit
 * order with no gap: a reader that sees epoch E sees every change up to E, and a missing one
 * means the log was pruned. An update lists the row as it was too when its id or hash changed.
 * The key tables' triggers now fire on an update of any column, so a column a later release
 * caches is covered, and the function skips an update that changed only `last_used_at` (the
 * batched key-use times, which no cached read returns).
 */
async function keyChangesPostgres(db: AnyDb): Promise<void> {
  await sql`CREATE OR REPLACE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      changed jsonb;
      position bigint;
    BEGIN
      IF TG_OP = 'UPDATE'
        AND (to_jsonb(OLD) - 'last_used_at') = (to_jsonb(NEW) - 'last_used_at') THEN
        RETURN NULL;
      END IF;
      FOREACH changed IN ARRAY ARRAY[
        CASE WHEN TG_OP = 'DELETE' OR (TG_OP = 'UPDATE'
          AND (to_jsonb(OLD)->>'id', to_jsonb(OLD)->>'secret_hash')
            IS DISTINCT FROM (to_jsonb(NEW)->>'id', to_jsonb(NEW)->>'secret_hash'))
        THEN to_jsonb(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END
      ] LOOP
        CONTINUE WHEN changed IS NULL;
        UPDATE key_epoch SET value = value + 1 WHERE id = 1 RETURNING value INTO position;
        INSERT INTO key_changes (epoch, table_name, row_id, secret_hash, at)
        VALUES (position, TG_TABLE_NAME, changed->>'id', changed->>'secret_hash',
          (extract(epoch FROM now()) * 1000)::bigint);
      END LOOP;
      RETURN NULL;
    END
  $$`.execute(db);
  for (const table of ["user_keys", "partner_keys"]) {
    const trigger = sql.raw(`${table}_key_epoch`);
    await sql`DROP TRIGGER ${trigger} ON ${sql.raw(table)}`.execute(db);
    await sql`CREATE CONSTRAINT TRIGGER ${trigger}
      AFTER INSERT OR DELETE OR UPDATE ON ${sql.raw(table)} DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
  }
}

/**
 * SQLite: the same log, written by plain triggers (one writer at a time, so epochs follow the
 * commit order here too). A row inserted or updated is listed as it is; a row deleted, or
 * updated away from its id or hash, as it was. Accounts are listed when changed or deleted. An
 * update of the key tables is listed unless it sets only `last_used_at`: the update triggers
 * name every other column the table has now, so a migration that adds a column to a key table
 * creates them again.
 */
async function keyChangesSqlite(db: AnyDb): Promise<void> {
  for (const table of ["user_keys", "partner_keys", "accounts", "sealing_keys"] as const) {
    await createSqliteChangeTriggers(db, table, ["insert", "update", "delete"]);
  }
}

/** The tables SQLite's triggers list, and whether a row's secret hash is listed with its id. */
const WATCHED = {
  user_keys: { hash: true, inserts: true },
  partner_keys: { hash: true, inserts: true },
  accounts: { hash: false, inserts: false },
  sealing_keys: { hash: false, inserts: true },
} as const;

/**
 * Creates `table`'s triggers of `events` as `keyChangesSqlite` describes them. The update
 * trigger names the columns the table has when it runs: a migration that adds a column to a
 * watched table drops that trigger and calls this again for it.
 */
export async function createSqliteChangeTriggers(
  db: AnyDb,
  table: keyof typeof WATCHED,
  events: readonly ("insert" | "update" | "delete")[],
): Promise<void> {
  const { hash, inserts } = WATCHED[table];
  const { rows } = await sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})
    WHERE name <> 'last_used_at' AND (${table} <> 'accounts' OR name <> 'created_at')`.execute(db);
  const columns = rows.map((row) => row.name).join(", ");
  const list = (row: "OLD" | "NEW", when = "") =>
    sql.raw(`UPDATE key_epoch SET value = value + 1 WHERE id = 1 ${when};
      INSERT INTO key_changes (epoch, table_name, row_id, secret_hash, at)
      SELECT value, '${table}', ${row}.id, ${hash ? `${row}.secret_hash` : "NULL"},
        CAST(unixepoch('subsec') * 1000 AS INTEGER)
      FROM key_epoch WHERE id = 1 ${when};`);
  const moved = hash
    ? "AND (OLD.id IS NOT NEW.id OR OLD.secret_hash IS NOT NEW.secret_hash)"
    : "AND OLD.id IS NOT NEW.id";
  const trigger = (event: string) => sql.raw(`${table}_${event}_change`);
  if (inserts && events.includes("insert")) {
    await sql`CREATE TRIGGER ${trigger("insert")} AFTER INSERT ON ${sql.raw(table)}
      BEGIN ${list("NEW")} END`.execute(db);
  }
  if (events.includes("update")) {
    await sql`CREATE TRIGGER ${trigger("update")} AFTER UPDATE OF ${sql.raw(columns)}
      ON ${sql.raw(table)} BEGIN ${list("OLD", moved)} ${list("NEW")} END`.execute(db);
  }
  if (events.includes("delete")) {
    await sql`CREATE TRIGGER ${trigger("delete")} AFTER DELETE ON ${sql.raw(table)}
      BEGIN ${list("OLD")} END`.execute(db);
  }
}
