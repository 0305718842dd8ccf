import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * PostgreSQL only: a counter bumped in the same transaction as any change that could alter a
 * cached verify or mint read (a key created, revoked, re-owned or deleted; an account's email
 * changed or the account deleted — its keys' deletion cascades). Instances read it before they
 * trust their key caches (`createReadCaches`, `@agentpass/db`). The triggers are deferred to commit, so the
 * counter's row lock is always the last lock a transaction takes and cannot join a deadlock.
 * Updates of `last_used_at` do not bump it. SQLite needs none: `PRAGMA data_version` tells.
 */
export async function keyEpochMigration(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE key_epoch (
    id integer PRIMARY KEY CHECK (id = 1),
    value bigint NOT NULL
  )`.execute(db);
  await sql`INSERT INTO key_epoch (id, value) VALUES (1, 0)`.execute(db);
  await sql`CREATE FUNCTION bump_key_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE key_epoch SET value = value + 1 WHERE id = 1;
      RETURN NULL;
    END
  $$`.execute(db);
  const triggers = [
    sql`CONSTRAINT TRIGGER user_keys_key_epoch
      AFTER INSERT OR DELETE OR UPDATE OF secret_hash, revoked_at, account_id ON user_keys`,
    sql`CONSTRAINT TRIGGER partner_keys_key_epoch
      AFTER INSERT OR DELETE OR UPDATE OF secret_hash, revoked_at, partner_id ON partner_keys`,
    sql`CONSTRAINT TRIGGER accounts_key_epoch AFTER DELETE OR UPDATE OF id, email ON accounts`,
  ];
  for (const trigger of triggers) {
    await sql`CREATE ${trigger} DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
  }
}
