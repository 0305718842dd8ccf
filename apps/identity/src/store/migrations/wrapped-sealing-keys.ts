import { sql } from "kysely";
import type { AnyDb } from "./any-db.ts";

/**
 * Sealing keys are kept wrapped under a key-encryption key that is not in the database
 * (`wrapped`); `secret`, the key in clear, becomes nullable and is erased by the first start
 * that has the secret (`loadSealingKeys`), which this migration cannot do: it has no KEK. A row
 * holds exactly one of the two. On PostgreSQL a change of the keys bumps `key_epoch`, so every
 * instance re-reads them on its next request (a rotation by the admin CLI).
 */
export async function wrappedSealingKeysPostgres(db: AnyDb): Promise<void> {
  await sql`ALTER TABLE sealing_keys ALTER COLUMN secret DROP NOT NULL`.execute(db);
  await sql`ALTER TABLE sealing_keys ADD COLUMN wrapped text`.execute(db);
  await sql`ALTER TABLE sealing_keys ADD CONSTRAINT sealing_keys_one_form
    CHECK ((secret IS NULL) <> (wrapped IS NULL))`.execute(db);
  await sql`CREATE CONSTRAINT TRIGGER sealing_keys_key_epoch
    AFTER INSERT OR DELETE OR UPDATE ON sealing_keys DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION bump_key_epoch()`.execute(db);
}

/** SQLite cannot drop a NOT NULL by ALTER: the (small) table is built again. */
export async function wrappedSealingKeysSqlite(db: AnyDb): Promise<void> {
  await sql`CREATE TABLE sealing_keys_0005 (
    id text PRIMARY KEY,
    secret text,
    wrapped text,
    created_at bigint NOT NULL,
    CHECK ((secret IS NULL) <> (wrapped IS NULL))
  )`.execute(db);
  await sql`INSERT INTO sealing_keys_0005 (id, secret, created_at)
    SELECT id, secret, created_at FROM sealing_keys`.execute(db);
  await sql`DROP TABLE sealing_keys`.execute(db);
  await sql`ALTER TABLE sealing_keys_0005 RENAME TO sealing_keys`.execute(db);
}
