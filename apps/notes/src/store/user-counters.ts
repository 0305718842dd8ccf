import { type Kysely, sql } from "kysely";

// biome-ignore lint/suspicious/noExplicitAny: migrations describe the schema before it is typed.
type AnyDb = Kysely<any>;

/*
 * The per-user counters of notes migration 0007 (`note_count`, `text_bytes`), kept by triggers
 * on each engine so that every write path, bulk loads included, keeps them right.
 */

/** The bytes a note's row `row` counts toward its user's text (`text_bytes`). */
export function noteBytesOf(row: string) {
  return sql.raw(
    `(octet_length(${row}.title) + octet_length(${row}.content) + octet_length(${row}.content_text))`,
  );
}

export async function createSqliteUserCounters(db: AnyDb): Promise<void> {
  await sql`DROP TRIGGER notes_count_insert`.execute(db);
  await sql`DROP TRIGGER notes_count_delete`.execute(db);
  await sql`CREATE TRIGGER notes_count_insert AFTER INSERT ON notes BEGIN
    UPDATE users SET note_count = note_count + 1, text_bytes = text_bytes + ${noteBytesOf("new")}
    WHERE id = new.user_id;
  END`.execute(db);
  await sql`CREATE TRIGGER notes_count_delete AFTER DELETE ON notes BEGIN
    UPDATE users SET note_count = note_count - 1, text_bytes = text_bytes - ${noteBytesOf("old")}
    WHERE id = old.user_id;
  END`.execute(db);
  await sql`CREATE TRIGGER notes_count_update AFTER UPDATE OF title, content, content_text ON notes
    WHEN ${noteBytesOf("new")} != ${noteBytesOf("old")}
    BEGIN
      UPDATE users SET text_bytes = text_bytes + ${noteBytesOf("new")} - ${noteBytesOf("old")}
      WHERE id = new.user_id;
    END`.execute(db);
}

export async function createPostgresUserCounters(db: AnyDb): Promise<void> {
  await sql`CREATE OR REPLACE FUNCTION notes_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE users SET note_count = note_count + 1, text_bytes = text_bytes + ${noteBytesOf("NEW")}
        WHERE id = NEW.user_id;
      ELSIF TG_OP = 'DELETE' THEN
        UPDATE users SET note_count = note_count - 1, text_bytes = text_bytes - ${noteBytesOf("OLD")}
        WHERE id = OLD.user_id;
      ELSE
        UPDATE users SET text_bytes = text_bytes + ${noteBytesOf("NEW")} - ${noteBytesOf("OLD")}
        WHERE id = NEW.user_id;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER notes_count_update AFTER UPDATE OF title, content, content_text ON notes
    FOR EACH ROW
    WHEN (${noteBytesOf("NEW")} IS DISTINCT FROM ${noteBytesOf("OLD")})
    EXECUTE FUNCTION notes_count()`.execute(db);
}
