import type { Engine } from "@agentpass/db";
import { type Kysely, type Migration, sql } from "kysely";
import {
  createPostgresUserCounters,
  createSqliteUserCounters,
  noteBytesOf,
} from "./user-counters.ts";

// biome-ignore lint/suspicious/noExplicitAny: migrations describe the schema before it is typed.
type AnyDb = Kysely<any>;

/**
 * Forward-only migrations of the notes database. The tables are the same on both engines;
 * the search index is each engine's own: an FTS5 trigram table on SQLite, a pg_trgm GIN index
 * on PostgreSQL. Both serve case-insensitive substring search.
 */
export function notesMigrations(engine: Engine): Record<string, Migration> {
  return {
    "0001_notes": {
      async up(db: AnyDb) {
        await sql`CREATE TABLE users (
          id text PRIMARY KEY,
          email text NOT NULL UNIQUE,
          created_at bigint NOT NULL
        )`.execute(db);
        // On SQLite `seq` is the rowid the full-text index points at; an explicit INTEGER
        // PRIMARY KEY keeps rowids stable across VACUUM.
        const seq = engine === "sqlite" ? sql`seq integer PRIMARY KEY,` : sql``;
        const id = engine === "sqlite" ? sql`id text NOT NULL UNIQUE` : sql`id text PRIMARY KEY`;
        await sql`CREATE TABLE notes (
          ${seq}
          ${id},
          user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          title text NOT NULL,
          content text NOT NULL,
          content_text text NOT NULL,
          created_at bigint NOT NULL,
          updated_at bigint NOT NULL
        )`.execute(db);
        await sql`CREATE INDEX notes_user_updated ON notes (user_id, updated_at DESC, id)`.execute(
          db,
        );
        await sql`CREATE TABLE tags (
          id text PRIMARY KEY,
          user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          name text NOT NULL,
          name_key text NOT NULL,
          created_at bigint NOT NULL,
          UNIQUE (user_id, name_key)
        )`.execute(db);
        await sql`CREATE TABLE note_tags (
          user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
          note_id text NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
          tag_id text NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
          PRIMARY KEY (note_id, tag_id)
        )`.execute(db);
        await sql`CREATE INDEX note_tags_tag ON note_tags (tag_id, note_id)`.execute(db);
        if (engine === "sqlite") await createSqliteSearch(db);
        else await createPostgresSearch(db);
      },
    },
    "0002_note_count": {
      // `total` of an unfiltered list was a COUNT over every note of the user: 17 ms at
      // 100,000 notes on SQLite. A counter kept by triggers (so every write path, bulk loads
      // included, keeps it right) makes it one row read.
      async up(db: AnyDb) {
        await sql`ALTER TABLE users ADD COLUMN note_count bigint NOT NULL DEFAULT 0`.execute(db);
        await sql`UPDATE users SET note_count = (SELECT count(*) FROM notes WHERE notes.user_id = users.id)`.execute(
          db,
        );
        if (engine === "sqlite") await createSqliteNoteCount(db);
        else await createPostgresNoteCount(db);
      },
    },
    "0003_folded_search": {
      // PostgreSQL only: the trigram index moves to the lowercased text, so a search is a LIKE
      // whose matches are rechecked as they are, instead of an ILIKE that lowercases each match
      // again (search.ts). Without GIN's pending list (`fastupdate`): new notes went to a list
      // that every search reads through until a vacuum merges it; in the bench, after a round of
      // ~3,000 creates, one search at a time fell from ~90 to 5 a second. A create now updates the
      // index itself, at no cost measurable next to its commit (~1 ms).
      async up(db: AnyDb) {
        if (engine !== "postgres") return;
        await sql`CREATE INDEX notes_search_folded ON notes
          USING gin (lower(title || E'\n' || content_text) gin_trgm_ops)
          WITH (fastupdate = off)`.execute(db);
        await sql`DROP INDEX notes_search`.execute(db);
      },
    },
    "0004_user_ranges": {
      // SQLite only: each user's notes get rowids (`seq`, which the full-text index points at)
      // in a range of their own, `number << 32` to `number << 32 | 0xFFFFFFFF`, so a search reads
      // only its user's part of the index (rowid BETWEEN, which FTS5 seeks to) and counts its
      // matches there without looking up any note: 8,000 matches across 4 users read 1.30 ms
      // of index for one user's 2,000, against 0.38 ms in the user's range. A trigger refuses a
      // note whose seq lies outside its user's range, so no write path can break that. Existing
      // notes move into their user's range (their old seq, under 2^32, is the offset) and the
      // index is rebuilt.
      async up(db: AnyDb) {
        if (engine !== "sqlite") return;
        await sql`ALTER TABLE users ADD COLUMN number integer`.execute(db);
        await sql`UPDATE users SET number = (SELECT count(*) FROM users earlier WHERE earlier.rowid <= users.rowid)`.execute(
          db,
        );
        await sql`CREATE UNIQUE INDEX users_number ON users (number)`.execute(db);
        await sql`UPDATE notes SET seq = (SELECT number FROM users WHERE users.id = notes.user_id) << 32 | seq`.execute(
          db,
        );
        await sql`CREATE TRIGGER notes_seq_in_range BEFORE INSERT ON notes
          WHEN new.seq >> 32 IS NOT (SELECT number FROM users WHERE id = new.user_id)
          BEGIN SELECT RAISE(ABORT, 'a note''s seq must lie in its user''s range'); END`.execute(
          db,
        );
        await sql`INSERT INTO notes_search (notes_search) VALUES ('rebuild')`.execute(db);
      },
    },
    "0005_seq_follows_writes": {
      // SQLite only: a note takes the next rowid of its user's range on every write, not only
      // when it is created, so a user's rowids run in the order of their notes' last writes, the
      // order of a list. A search then reads the newest matches straight off the end of its
      // user's part of the index, without gathering every match first (search-sqlite.ts,
      // `newestMatchesPage`): 0.91 → 0.71 ms for 2,000 matches of 100,000 notes. Existing notes
      // are renumbered in that order (`updated_at`, then `id` descending: the last of a list gets
      // the lowest) and the index is rebuilt; the full-text index follows a note's rowid when it
      // moves, and a trigger keeps a moved rowid in its user's range as 0004's does a new one.
      async up(db: AnyDb) {
        if (engine !== "sqlite") return;
        await sql`DROP TRIGGER notes_search_update`.execute(db);
        await sql`CREATE TEMP TABLE renumbered (id text PRIMARY KEY, seq integer NOT NULL)`.execute(
          db,
        );
        await sql`INSERT INTO renumbered (id, seq)
          SELECT n.id, u.number << 32
            | row_number() OVER (PARTITION BY n.user_id ORDER BY n.updated_at, n.id DESC)
          FROM notes n JOIN users u ON u.id = n.user_id`.execute(db);
        // Through negative rowids, which no note has, so no two notes ever share one midway.
        await sql`UPDATE notes SET seq = -seq`.execute(db);
        await sql`UPDATE notes SET seq = (SELECT r.seq FROM renumbered r WHERE r.id = notes.id)`.execute(
          db,
        );
        await sql`DROP TABLE temp.renumbered`.execute(db);
        await sql`INSERT INTO notes_search (notes_search) VALUES ('rebuild')`.execute(db);
        await sql`CREATE TRIGGER notes_search_update AFTER UPDATE OF title, content_text, seq ON notes BEGIN
          INSERT INTO notes_search (notes_search, rowid, title, content_text)
            VALUES ('delete', old.seq, old.title, old.content_text);
          INSERT INTO notes_search (rowid, title, content_text) VALUES (new.seq, new.title, new.content_text);
        END`.execute(db);
        await sql`CREATE TRIGGER notes_seq_in_range_update BEFORE UPDATE OF seq ON notes
          WHEN new.seq >> 32 IS NOT (SELECT number FROM users WHERE id = new.user_id)
          BEGIN SELECT RAISE(ABORT, 'a note''s seq must lie in its user''s range'); END`.execute(
          db,
        );
      },
    },
    "0006_listed_json": {
      // Each note keeps its JSON as a list writes it, up to its tags (`listingOf0006`), so a plain
      // page reads 3 columns a note instead of 8 and builds no JSON. Existing notes get theirs
      // here, 1,000 at a time. Dropped again by 0008.
      async up(db: AnyDb) {
        await sql`ALTER TABLE notes ADD COLUMN listed_json text NOT NULL DEFAULT ''`.execute(db);
        let after = "";
        for (;;) {
          const { rows } = await sql<{
            id: string;
            title: string;
            content: string;
            content_text: string;
            created_at: number | string;
            updated_at: number | string;
          }>`SELECT id, title, content, content_text, created_at, updated_at FROM notes
            WHERE id > ${after} ORDER BY id LIMIT 1000`.execute(db);
          const last = rows.at(-1);
          if (!last) break;
          const ids = rows.map((row) => row.id);
          const listings = rows.map((row) =>
            listingOf0006(
              row.id,
              row.title,
              row.content,
              row.content_text,
              Number(row.created_at),
              Number(row.updated_at),
            ),
          );
          if (engine === "postgres") {
            await sql`UPDATE notes SET listed_json = v.listed
              FROM unnest(${ids}::text[], ${listings}::text[]) AS v (id, listed)
              WHERE notes.id = v.id`.execute(db);
          } else {
            for (const [i, id] of ids.entries()) {
              await sql`UPDATE notes SET listed_json = ${listings[i]} WHERE id = ${id}`.execute(db);
            }
          }
          after = last.id;
        }
        // Every write names it from now on (PostgreSQL: no default to fall back on; SQLite
        // cannot drop a column's default, so a trigger refuses an empty one).
        if (engine === "postgres") {
          await sql`ALTER TABLE notes ALTER COLUMN listed_json DROP DEFAULT`.execute(db);
        } else {
          await sql`CREATE TRIGGER notes_listed_json BEFORE INSERT ON notes
            WHEN new.listed_json = ''
            BEGIN SELECT RAISE(ABORT, 'a note needs its listed_json'); END`.execute(db);
        }
      },
    },
    "0007_text_bytes": {
      // Each user's text, in UTF-8 bytes of title, content and content_text over all their
      // notes, kept beside the note counter by the same triggers (one UPDATE of the user a
      // create or delete, as before), so the store can hold a user to a text cap (limits.ts,
      // `refuseGrowthOverCap`; notes.ts, `writeCreates`) inside the transaction of the write,
      // without adding up their notes. An update changes it only when a note's size changes.
      async up(db: AnyDb) {
        await sql`ALTER TABLE users ADD COLUMN text_bytes bigint NOT NULL DEFAULT 0`.execute(db);
        await sql`UPDATE users SET text_bytes = coalesce((
          SELECT sum(${noteBytesOf("notes")}) FROM notes WHERE notes.user_id = users.id
        ), 0)`.execute(db);
        if (engine === "sqlite") await createSqliteUserCounters(db);
        else await createPostgresUserCounters(db);
      },
    },
    "0008_drop_listed_json": {
      // A list presents its notes from their columns, as a single note is: no note keeps its
      // JSON any more (0006). SQLite cannot drop a column a trigger names: 0006's goes first.
      async up(db: AnyDb) {
        if (engine === "sqlite") await sql`DROP TRIGGER IF EXISTS notes_listed_json`.execute(db);
        await sql`ALTER TABLE notes DROP COLUMN listed_json`.execute(db);
      },
    },
    "0009_counters_per_statement": {
      // PostgreSQL: the user's counters follow a statement's inserted or deleted notes with one
      // UPDATE of each user they belong to, not one per note: a user's creates are inserted
      // together (store/notes.ts, `writeCreates`), and 50 row-level UPDATEs of the same row cost
      // as much as the 50 notes' own index entries. Updates stay row-level (one note each).
      // SQLite has no statement-level triggers; its row-level ones run in-process and stay.
      async up(db: AnyDb) {
        if (engine === "sqlite") return;
        await sql`DROP TRIGGER notes_count ON notes`.execute(db);
        for (const [event, table, sign] of [
          ["INSERT", "inserted", "+"],
          ["DELETE", "deleted", "-"],
        ] as const) {
          const name = sql.raw(`notes_count_${table}`);
          await sql`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              UPDATE users u
              SET note_count = u.note_count ${sql.raw(sign)} d.notes,
                  text_bytes = u.text_bytes ${sql.raw(sign)} d.bytes
              FROM (
                SELECT user_id, count(*) AS notes, sum(${noteBytesOf(table)}) AS bytes
                FROM ${sql.raw(table)} GROUP BY user_id
              ) d
              WHERE u.id = d.user_id;
              RETURN NULL;
            END $$`.execute(db);
          await sql`CREATE TRIGGER ${name} AFTER ${sql.raw(event)} ON notes
            REFERENCING ${sql.raw(event === "INSERT" ? "NEW" : "OLD")} TABLE AS ${sql.raw(table)}
            FOR EACH STATEMENT EXECUTE FUNCTION ${name}()`.execute(db);
        }
      },
    },
    "0010_user_changes": {
      // PostgreSQL: a counter every statement that adds, removes or re-keys users bumps in its
      // own transaction, so an instance can cache users by email and still see such a change
      // on its next request, by one read of the counter an event-loop turn (users.ts). SQLite
      // needs none: `PRAGMA data_version` tells a connection of any other's commit.
      async up(db: AnyDb) {
        if (engine === "sqlite") return;
        await sql`CREATE TABLE user_changes (version bigint NOT NULL)`.execute(db);
        await sql`INSERT INTO user_changes (version) VALUES (0)`.execute(db);
        await sql`CREATE FUNCTION users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            UPDATE user_changes SET version = version + 1;
            RETURN NULL;
          END $$`.execute(db);
        await sql`CREATE TRIGGER users_changed AFTER INSERT OR DELETE OR UPDATE OF id, email
          ON users FOR EACH STATEMENT EXECUTE FUNCTION users_changed()`.execute(db);
      },
    },
    "0011_search_text": {
      // PostgreSQL only: the lowercased text a search matches, stored once per write in a
      // generated column with its own trigram index, instead of an index on an expression that
      // every recheck of a candidate row computes again (BENCHMARKS.md, "Search on PostgreSQL").
      // The expression's index (0003) stays while releases that search through it may still
      // run against this schema (a rollback); a later migration drops it.
      async up(db: AnyDb) {
        if (engine !== "postgres") return;
        await sql`ALTER TABLE notes ADD COLUMN search_text text
          GENERATED ALWAYS AS (lower(title || E'\n' || content_text)) STORED`.execute(db);
        await sql`CREATE INDEX notes_search_text ON notes
          USING gin (search_text gin_trgm_ops) WITH (fastupdate = off)`.execute(db);
      },
    },
    "0012_note_agents": {
      // The agent that created a note (its AgentPass id and its name then): the partner's own
      // record of which of a person's agents wrote what. Expand only: nullable columns.
      async up(db: AnyDb) {
        await sql`ALTER TABLE notes ADD COLUMN agent_id text`.execute(db);
        await sql`ALTER TABLE notes ADD COLUMN agent_name text`.execute(db);
      },
    },
  };
}

/**
 * The listing 0006 wrote for each note: its JSON as a list wrote it then, up to its tags
 * (`content` is the stored JSON text). Kept as it was, for that migration only.
 */
function listingOf0006(
  id: string,
  title: string,
  content: string,
  contentText: string,
  createdAt: number,
  updatedAt: number,
): string {
  const quote = JSON.stringify;
  const time = (ms: number) => new Date(ms).toISOString();
  return `{"id":${quote(id)},"title":${quote(title)},"content":${content},"contentText":${quote(contentText)},"createdAt":"${time(createdAt)}","updatedAt":"${time(updatedAt)}","tags":`;
}

async function createSqliteNoteCount(db: AnyDb): Promise<void> {
  await sql`CREATE TRIGGER notes_count_insert AFTER INSERT ON notes BEGIN
    UPDATE users SET note_count = note_count + 1 WHERE id = new.user_id;
  END`.execute(db);
  await sql`CREATE TRIGGER notes_count_delete AFTER DELETE ON notes BEGIN
    UPDATE users SET note_count = note_count - 1 WHERE id = old.user_id;
  END`.execute(db);
}

async function createPostgresNoteCount(db: AnyDb): Promise<void> {
  await sql`CREATE FUNCTION notes_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE users SET note_count = note_count + 1 WHERE id = NEW.user_id;
      ELSE
        UPDATE users SET note_count = note_count - 1 WHERE id = OLD.user_id;
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER notes_count AFTER INSERT OR DELETE ON notes
    FOR EACH ROW EXECUTE FUNCTION notes_count()`.execute(db);
}

async function createSqliteSearch(db: AnyDb): Promise<void> {
  await sql`CREATE VIRTUAL TABLE notes_search USING fts5(
    title, content_text, content='notes', content_rowid='seq', tokenize='trigram'
  )`.execute(db);
  await sql`CREATE TRIGGER notes_search_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_search (rowid, title, content_text) VALUES (new.seq, new.title, new.content_text);
  END`.execute(db);
  await sql`CREATE TRIGGER notes_search_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_search (notes_search, rowid, title, content_text)
      VALUES ('delete', old.seq, old.title, old.content_text);
  END`.execute(db);
  await sql`CREATE TRIGGER notes_search_update AFTER UPDATE OF title, content_text ON notes BEGIN
    INSERT INTO notes_search (notes_search, rowid, title, content_text)
      VALUES ('delete', old.seq, old.title, old.content_text);
    INSERT INTO notes_search (rowid, title, content_text) VALUES (new.seq, new.title, new.content_text);
  END`.execute(db);
}

async function createPostgresSearch(db: AnyDb): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
  // A newline joins the two fields: a search term never holds whitespace, so it can never
  // match across the seam.
  await sql`CREATE INDEX notes_search ON notes
    USING gin ((title || E'\n' || content_text) gin_trgm_ops)`.execute(db);
}
