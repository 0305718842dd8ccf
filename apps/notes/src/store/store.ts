import { randomUUID } from "node:crypto";
import {
  createPreparedQuery,
  createPreparedRows,
  createRowsReader,
  type Engine,
  type OpenedDatabase,
} from "@agentpass/db";
import { type CompiledQuery, type Kysely, type RawBuilder, sql, type Transaction } from "kysely";
import { DEFAULT_NOTES_LIMITS, type NotesLimits, noteTextBytes, refuseOverCaps } from "./limits.ts";
import { noteListing } from "./listing.ts";
import type { NotesDatabase } from "./schema.ts";
import { searchSql, searchTerms } from "./search.ts";
import { createSearchReader } from "./search-reader.ts";

export interface User {
  id: string;
  email: string;
  createdAt: number;
}

export interface Tag {
  id: string;
  name: string;
  createdAt: number;
}

export interface Note {
  id: string;
  title: string;
  content: unknown;
  contentText: string;
  createdAt: number;
  updatedAt: number;
  tags: Tag[];
}

export interface NoteFields {
  title: string;
  content: unknown;
  contentText: string;
}

export interface ListQuery {
  search?: string | undefined;
  tagId?: string | undefined;
  limit: number;
  offset: number;
}

/** A list with neither search nor tag. */
export type PlainQuery = Pick<ListQuery, "limit" | "offset">;

export interface NotesPage {
  notes: Note[];
  /** How many notes match across every page. */
  total: number;
}

const NOTE_COLUMNS = [
  "id",
  "title",
  "content",
  "content_text",
  "created_at",
  "updated_at",
] as const;
type Db = Kysely<NotesDatabase> | Transaction<NotesDatabase>;
type NoteRow = Pick<NotesDatabase["notes"], (typeof NOTE_COLUMNS)[number]>;
/**
 * A note as a list reads it: its columns in `NOTE_COLUMNS` order, then its tags as JSON text
 * (`[[id, name, createdAt], …]` in tag order; null for none).
 */
export type ListedNote = [string, string, string, string, number, number, string | null];
/** A row of a page: a listed note, then the total (the user's note counter on a plain list). */
type PageRow = [...ListedNote, number];

/**
 * A page of notes as the list read them (`ListedNote` rows, tags as JSON text), for an answer
 * written straight from the rows (`listedPageJson` in presenters.ts).
 */
export interface ListedPage {
  /** Each row a `ListedNote`, perhaps followed by columns of the page (the total). */
  notes: readonly (ListedNote | PageRow)[];
  /** How many notes match across every page. */
  total: number;
}

/**
 * A note as a plain page reads it: its stored listing (`noteListing`), its tags as in a
 * `ListedNote`, then the user's note counter.
 */
type ListingRow = [string, string | null, number];

/** A plain page as its notes' listings, for `listingPageJson` (presenters.ts). */
export interface ListingPage {
  notes: readonly ListingRow[];
  /** How many notes the user has. */
  total: number;
}

/**
 * The columns of a listed note `n` (`ListedNote`), tags included. A list is read in as few
 * statements as it can be: each statement is a read transaction of its own, and on SQLite each
 * of those costs file-lock system calls (measured: a page of 20 notes went from 6,400 to 7,400
 * requests/s when its page, tags and total came from one statement instead of three, and to
 * ~9,500 when the user's lookup joined them). A note without tags skips the ordered aggregate
 * (5 of its 6.5 µs a note on SQLite).
 */
function listedColumnsOf(engine: Engine): string {
  return `${NOTE_COLUMNS.map((column) => `n.${column}`).join(", ")}, ${tagsColumnOf(engine)}`;
}

/** The tags of a listed note `n`, as JSON text (`ListedNote`). */
function tagsColumnOf(engine: Engine): string {
  const tagArray =
    engine === "sqlite"
      ? "json_group_array(json_array(t.id, t.name, t.created_at) ORDER BY t.name_key, t.id)"
      : "json_agg(json_build_array(t.id, t.name, t.created_at) ORDER BY t.name_key, t.id)::text";
  return `CASE WHEN EXISTS (SELECT 1 FROM note_tags nt WHERE nt.note_id = n.id) THEN
      (SELECT ${tagArray} FROM note_tags nt JOIN tags t ON t.id = nt.tag_id
       WHERE nt.user_id = n.user_id AND nt.note_id = n.id)
    END`;
}

/**
 * SQLite: the `seq` a note of the user takes when it is written (created or updated): the next in
 * their range (migrations.ts, "0004_user_ranges" and "0005_seq_follows_writes"), so rowids run in
 * the order of last writes. A user's 2^32-th write would leave the range: the range triggers
 * refuse it (at 10 writes a second, after 13 years).
 */
export function nextNoteSeq(userId: string) {
  return sql<number>`(
    SELECT coalesce((SELECT max(seq) FROM notes WHERE seq BETWEEN r.lo AND r.lo | 4294967295), r.lo) + 1
    FROM (SELECT number << 32 AS lo FROM users WHERE id = ${userId}) r
  )`;
}

const LISTED_COLUMNS = { sqlite: listedColumnsOf("sqlite"), postgres: listedColumnsOf("postgres") };

/**
 * The statements of a list with a tag or a search. `page` reads the page's notes (`PageRow`s)
 * in one statement, so the page and its total come from one snapshot; `count` compiles the
 * statement that reads the total alone, for a page past the last match (which has no row to
 * carry it).
 *
 * In general the matches are gathered once (their times and ids), ordered and counted, and only
 * the page's notes are read in full. On SQLite the notes are joined to the full-text index's
 * matches in the user's range of rowids (a join, not `IN`, which built a temporary index of the
 * matches first: 1.23 → 1.13 ms for 2,000 matches of 100,000 notes). A search by full-text terms
 * alone, to a shallow page, reads its newest matches (`newestMatchesPage`). On PostgreSQL the
 * matches carry no LIMIT, so its planner takes the trigram index rather than walking the
 * newest-first one (docs/decisions.md, "Storage").
 */
export function filteredListQueries(
  database: Pick<OpenedDatabase<NotesDatabase>, "db" | "engine">,
  userId: string,
  query: ListQuery,
): { page: CompiledQuery; count: () => CompiledQuery } {
  const { db, engine } = database;
  const search = searchSql(engine, searchTerms(query.search));
  if (
    search?.match &&
    search.conditions.length === 0 &&
    !query.tagId &&
    query.limit + query.offset <= NEWEST_MATCHES_MAX
  ) {
    const matching = sql<boolean>`notes_search MATCH ${search.match}
      AND notes_search.rowid ${userRange(userId)}`;
    return {
      page: newestMatchesPage(matching, userId, query).compile(db),
      count: () => sql`SELECT count(*) FROM notes_search WHERE ${matching}`.compile(db),
    };
  }
  const source = search?.match
    ? sql`notes_search JOIN notes n ON n.seq = notes_search.rowid
      WHERE notes_search MATCH ${search.match} AND notes_search.rowid ${userRange(userId)} AND`
    : sql`notes n WHERE`;
  const conditions = [
    sql`n.user_id = ${userId}`,
    ...(query.tagId
      ? [
          sql`n.id IN (SELECT note_id FROM note_tags WHERE user_id = ${userId} AND tag_id = ${query.tagId})`,
        ]
      : []),
    ...(search?.conditions ?? []),
  ];
  const matches = sql`WITH matches AS MATERIALIZED (
    SELECT n.updated_at, n.id FROM ${source} ${sql.join(conditions, sql` AND `)}
  )`;
  return {
    page: sql`${matches},
      page AS (
        SELECT updated_at, id FROM matches ORDER BY updated_at DESC, id
        LIMIT ${query.limit} OFFSET ${query.offset}
      )
      SELECT ${sql.raw(LISTED_COLUMNS[engine])}, (SELECT count(*) FROM matches)
      FROM page JOIN notes n ON n.id = page.id
      ORDER BY page.updated_at DESC, page.id`.compile(db),
    count: () => sql`${matches} SELECT count(*) FROM matches`.compile(db),
  };
}

/** SQLite: `BETWEEN` the first and last rowid of the user's range (migrations.ts, 0004). */
function userRange(userId: string) {
  return sql`BETWEEN (SELECT number << 32 FROM users WHERE id = ${userId})
    AND (SELECT number << 32 | 4294967295 FROM users WHERE id = ${userId})`;
}

/** The deepest page (`limit + offset`) a search reads from its newest matches. */
const NEWEST_MATCHES_MAX = 100;

/**
 * SQLite: a page of a search by full-text terms alone, no deeper than `NEWEST_MATCHES_MAX`, from
 * the newest matches. A note takes the next rowid of its user's range on every write
 * (`nextNoteSeq`), so the last `limit + offset` matches in rowid order (read backwards off the
 * end of the user's part of the index, `top`) are, but for notes written in the same
 * millisecond or a clock set back, the page's. The statement proves it before using them:
 * - `edge`: the last of `top` in the list's order (`updated_at` descending, then `id`);
 * - a match ranking above `edge` that `top` lacks has a rowid below all of `top`'s, so `top` is
 *   the page's set unless one of the user's notes ranking above `edge` (a short walk down the
 *   newest-first index, which reads no note) has a rowid below `top`'s lowest. The walk stops
 *   after as many notes as there are rowids from that lowest to the user's last, plus one: more
 *   than that and one of them lies below. It is taken only where it should be short, within
 *   8 × the matches (+ the page) of the newest; `top` holding every match needs no walk.
 * Otherwise every match is looked up and ordered, as in the general statement. The total is the
 * index's count of the user's matches, with no note read. Measured on 100,000 notes, 2,000
 * matching every 50th, first page of 20: 0.91 → 0.71 ms (it gathered every match, then walked
 * the index testing each note against them); a 3-letter term in 2,472: 0.60 → 0.27 ms.
 */
function newestMatchesPage(matching: RawBuilder<boolean>, userId: string, query: ListQuery) {
  const { limit, offset } = query;
  const need = sql.lit(Math.trunc(limit + offset));
  return sql`WITH total AS MATERIALIZED (
      SELECT count(*) AS n FROM notes_search WHERE ${matching}
    ),
    top AS MATERIALIZED (
      SELECT n.updated_at, n.id, n.seq FROM (
        SELECT rowid AS seq FROM notes_search WHERE ${matching}
        ORDER BY rowid DESC LIMIT ${need}
      ) f CROSS JOIN notes n ON n.seq = f.seq
    ),
    edge AS MATERIALIZED (
      SELECT updated_at, id, (SELECT min(seq) FROM top) AS lowest,
        (SELECT max(seq) FROM notes WHERE seq ${userRange(userId)}) - (SELECT min(seq) FROM top) + 1 AS reach
      FROM top ORDER BY updated_at, id DESC LIMIT 1
    ),
    proven AS MATERIALIZED (
      SELECT (SELECT count(*) FROM top) = (SELECT n FROM total) OR (
        EXISTS (SELECT 1 FROM edge WHERE reach <= 8 * (SELECT n FROM total) + ${need})
        AND NOT EXISTS (
          SELECT 1 FROM (
            SELECT n.seq FROM edge CROSS JOIN notes n INDEXED BY notes_user_updated
            WHERE n.user_id = ${userId} AND n.updated_at >= edge.updated_at
              AND (n.updated_at > edge.updated_at OR n.id < edge.id)
            LIMIT (SELECT reach + 1 FROM edge)
          ) WHERE seq < (SELECT lowest FROM edge)
        )
      ) AS yes
    ),
    page AS (
      SELECT * FROM (
        SELECT updated_at, id, seq FROM top ORDER BY updated_at DESC, id
        LIMIT (SELECT CASE WHEN yes THEN ${limit} ELSE 0 END FROM proven) OFFSET ${offset}
      )
      UNION ALL
      SELECT * FROM (
        SELECT n.updated_at, n.id, n.seq FROM notes_search CROSS JOIN notes n ON n.seq = notes_search.rowid
        WHERE ${matching}
        ORDER BY n.updated_at DESC, n.id
        LIMIT (SELECT CASE WHEN yes THEN 0 ELSE ${limit} END FROM proven) OFFSET ${offset}
      )
    )
    SELECT ${sql.raw(LISTED_COLUMNS.sqlite)}, (SELECT n FROM total)
    FROM page CROSS JOIN notes n ON n.seq = page.seq
    ORDER BY page.updated_at DESC, page.id`;
}

/**
 * The notes API's storage boundary. Every read and write names the user first: one user's
 * notes and tags can never be reached through another user's id. `limits` (defaults
 * `DEFAULT_NOTES_LIMITS`) bound each search statement and what each user may store; a request
 * past them is refused with a `Refusal` (limits.ts).
 */
export function createNotesStore(
  database: OpenedDatabase<NotesDatabase>,
  limits: Partial<NotesLimits> = {},
) {
  const { db, engine } = database;
  const caps: NotesLimits = { ...DEFAULT_NOTES_LIMITS, ...limits };
  // The reads of every list, as prepared statements: the query builder's compilation cost more
  // than the statements themselves (BENCHMARKS.md, "Notes API").
  const userByEmail = createPreparedQuery<{ id: string; email: string; created_at: number }>(
    database,
    "SELECT id, email, created_at FROM users WHERE email = ?",
  );
  const listedColumns = LISTED_COLUMNS[engine];
  // One statement per page size (1 to 500): SQLite runs a page with a literal LIMIT in about two
  // thirds of the time it takes with a bound one (measured: 57 against 89 µs for 20 notes). Rows
  // come as arrays, which halves the cost of reading them (`createPreparedRows`). The user's note
  // counter rides along as the last column.
  const plainPages = new Map<number, (user: string, offset: number) => Promise<PageRow[]>>();
  const plainPage = (userId: string, limit: number, offset: number) => {
    let page = plainPages.get(limit);
    if (!page) {
      const rows = createPreparedRows<PageRow>(
        database,
        `SELECT ${listedColumns}, (SELECT note_count FROM users WHERE id = ?)
         FROM notes n WHERE n.user_id = ?
         ORDER BY n.updated_at DESC, n.id LIMIT ${Math.trunc(limit)} OFFSET ?`,
        { arrays: true },
      );
      page = (user: string, at: number) => rows(user, user, at);
      plainPages.set(limit, page);
    }
    return page(userId, offset);
  };
  // The plain page of the fast path, by email: each note's stored listing and tags (3 columns a
  // note instead of 8; `noteListing`), one statement per page size as above.
  const listingPages = new Map<number, (email: string, offset: number) => Promise<ListingRow[]>>();
  const listingPage = (email: string, limit: number, offset: number) => {
    let page = listingPages.get(limit);
    if (!page) {
      const rows = createPreparedRows<ListingRow>(
        database,
        `SELECT n.listed_json, ${tagsColumnOf(engine)}, (SELECT note_count FROM users WHERE email = ?)
         FROM notes n WHERE n.user_id = (SELECT id FROM users WHERE email = ?)
         ORDER BY n.updated_at DESC, n.id LIMIT ${Math.trunc(limit)} OFFSET ?`,
        { arrays: true },
      );
      page = (user: string, at: number) => rows(user, user, at);
      listingPages.set(limit, page);
    }
    return page(email, offset);
  };
  const readRows = createRowsReader(database);
  const readSearch = createSearchReader(database, caps.searchTimeoutMs);
  const noteCount = createPreparedQuery<{ note_count: number }>(
    database,
    "SELECT note_count FROM users WHERE id = ?",
  );

  /** Every note of the user, newest-updated first; the total is the user's counter. */
  async function plainList(userId: string, query: PlainQuery): Promise<ListedPage> {
    const page = await plainPage(userId, query.limit, query.offset);
    // A page past the last note has no row to carry the counter.
    const total = page[0]?.[7] ?? (await noteCount(userId))?.note_count ?? 0;
    return { notes: page, total: Number(total) };
  }

  /**
   * A list with a tag or a search (`filteredListQueries`), read in one statement; a search's
   * statements within their budget (`createSearchReader`).
   */
  async function filteredList(userId: string, query: ListQuery): Promise<ListedPage> {
    const { page, count } = filteredListQueries(database, userId, query);
    const read = searchTerms(query.search).length > 0 ? readSearch : readRows;
    const rows = await read<PageRow>(page);
    if (rows.length > 0 || query.offset === 0) {
      return { notes: rows, total: Number(rows[0]?.[7] ?? 0) };
    }
    // A page past the last match has no row to carry the total.
    const [total] = await read<[number]>(count());
    return { notes: [], total: Number(total?.[0] ?? 0) };
  }

  async function listedPage(userId: string, query: ListQuery): Promise<ListedPage> {
    return query.tagId || searchTerms(query.search).length > 0
      ? filteredList(userId, query)
      : plainList(userId, query);
  }

  return {
    db,

    /**
     * The plain list (no search, no tag) of the user with `email`, read with the user in one
     * statement: the list an agent calls most, without a separate lookup of the user
     * (`fast-list.ts`). The same notes and total as `listNotes` for that user, as the rows were
     * read; undefined for no user.
     */
    async plainListOf(email: string, query: PlainQuery): Promise<ListingPage | undefined> {
      const page = await listingPage(email, query.limit, query.offset);
      if (page.length > 0) return { notes: page, total: Number(page[0]?.[2]) };
      const user = await userByEmail(email);
      return user && { notes: [], total: Number((await noteCount(user.id))?.note_count ?? 0) };
    },

    async findUserByEmail(email: string): Promise<User | undefined> {
      const row = await userByEmail(email);
      return row && { id: row.id, email: row.email, createdAt: row.created_at };
    },

    async addUser(email: string, createdAt: number): Promise<User | null> {
      const user = { id: randomUUID(), email, created_at: createdAt };
      const inserted = await db
        .insertInto("users")
        .values({
          ...user,
          // SQLite: the number whose range holds the user's notes (migrations.ts, 0004).
          ...(engine === "sqlite" && {
            number: sql<number>`(SELECT coalesce(max(number), 0) + 1 FROM users)`,
          }),
        })
        .onConflict((oc) => oc.column("email").doNothing())
        .returning("id")
        .executeTakeFirst();
      return inserted ? { id: user.id, email, createdAt } : null;
    },

    async listUsers(): Promise<User[]> {
      const rows = await db.selectFrom("users").selectAll().orderBy("email").execute();
      return rows.map((row) => ({ id: row.id, email: row.email, createdAt: row.created_at }));
    },

    /** Removes a user with every note and tag they have. */
    async removeUser(email: string): Promise<boolean> {
      const result = await db.deleteFrom("users").where("email", "=", email).executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async listNotes(userId: string, query: ListQuery): Promise<NotesPage> {
      const { notes, total } = await listedPage(userId, query);
      return { notes: notes.map(listedNote), total };
    },

    /** `listNotes` as the rows were read, for writing the page's JSON from them (`listedPageJson`). */
    listedPage,

    async getNote(userId: string, id: string): Promise<Note | undefined> {
      return getNote(db, userId, id);
    },

    /** A new note; refused (`NOTE_LIMIT`, `TEXT_LIMIT`) past the user's caps. */
    async createNote(
      userId: string,
      fields: NoteFields,
      tagIds: string[],
      now: number,
    ): Promise<Note> {
      const id = randomUUID();
      const content = JSON.stringify(fields.content);
      return db.transaction().execute(async (trx) => {
        await trx
          .insertInto("notes")
          .values({
            ...(engine === "sqlite" && { seq: nextNoteSeq(userId) }),
            id,
            user_id: userId,
            title: fields.title,
            content,
            content_text: fields.contentText,
            created_at: now,
            updated_at: now,
            listed_json: noteListing(id, fields.title, content, fields.contentText, now, now),
          })
          .execute();
        await refuseOverCaps(trx, caps, userId, { created: true, grew: true });
        await setNoteTags(trx, userId, id, tagIds);
        return (await getNote(trx, userId, id)) as Note;
      });
    },

    /**
     * Applies `fields` and, when given, replaces the tag set. Undefined for another's note. The
     * note is read first (locked on PostgreSQL; on SQLite the write fails if another connection
     * wrote since the read), so its stored listing is made from the fields it ends up with.
     * Refused (`TEXT_LIMIT`) when it grows the note past the user's text cap.
     */
    async updateNote(
      userId: string,
      id: string,
      fields: Partial<NoteFields>,
      tagIds: string[] | undefined,
      now: number,
    ): Promise<Note | undefined> {
      return db.transaction().execute(async (trx) => {
        let read = trx
          .selectFrom("notes")
          .select(["title", "content", "content_text", "created_at"])
          .where("user_id", "=", userId)
          .where("id", "=", id);
        if (engine === "postgres") read = read.forUpdate();
        const current = await read.executeTakeFirst();
        if (!current) return undefined;
        const title = fields.title ?? current.title;
        const content =
          fields.content !== undefined ? JSON.stringify(fields.content) : current.content;
        const contentText = fields.contentText ?? current.content_text;
        const createdAt = Number(current.created_at);
        await trx
          .updateTable("notes")
          .set({
            title,
            content,
            content_text: contentText,
            ...(engine === "sqlite" && { seq: nextNoteSeq(userId) }),
            updated_at: now,
            listed_json: noteListing(id, title, content, contentText, createdAt, now),
          })
          .where("user_id", "=", userId)
          .where("id", "=", id)
          .execute();
        const grew =
          noteTextBytes(title, content, contentText) >
          noteTextBytes(current.title, current.content, current.content_text);
        if (grew) await refuseOverCaps(trx, caps, userId, { created: false, grew });
        if (tagIds) {
          await trx
            .deleteFrom("note_tags")
            .where("user_id", "=", userId)
            .where("note_id", "=", id)
            .execute();
          await setNoteTags(trx, userId, id, tagIds);
        }
        return getNote(trx, userId, id);
      });
    },

    async deleteNote(userId: string, id: string): Promise<boolean> {
      const result = await db
        .deleteFrom("notes")
        .where("user_id", "=", userId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async listTags(userId: string): Promise<Tag[]> {
      const rows = await db
        .selectFrom("tags")
        .select(["id", "name", "created_at"])
        .where("user_id", "=", userId)
        .orderBy("name_key")
        .orderBy("id")
        .execute();
      return rows.map(toTag);
    },

    /** A new tag, or null when the user has one of that name (ignoring case). */
    async createTag(userId: string, name: string, now: number): Promise<Tag | null> {
      const id = randomUUID();
      const inserted = await db
        .insertInto("tags")
        .values({ id, user_id: userId, name, name_key: nameKey(name), created_at: now })
        .onConflict((oc) => oc.columns(["user_id", "name_key"]).doNothing())
        .returning("id")
        .executeTakeFirst();
      return inserted ? { id, name, createdAt: now } : null;
    },

    /** Renames a tag: the tag, "exists" on a name clash, or undefined for another's tag. */
    async renameTag(userId: string, id: string, name: string): Promise<Tag | "exists" | undefined> {
      const clash = await db
        .selectFrom("tags")
        .select("id")
        .where("user_id", "=", userId)
        .where("name_key", "=", nameKey(name))
        .where("id", "!=", id)
        .executeTakeFirst();
      if (clash) return "exists";
      const row = await db
        .updateTable("tags")
        .set({ name, name_key: nameKey(name) })
        .where("user_id", "=", userId)
        .where("id", "=", id)
        .returning(["id", "name", "created_at"])
        .executeTakeFirst();
      return row && toTag(row);
    },

    async deleteTag(userId: string, id: string): Promise<boolean> {
      const result = await db
        .deleteFrom("tags")
        .where("user_id", "=", userId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },
  };
}

export type NotesStore = ReturnType<typeof createNotesStore>;

/** Tag names compare ignoring case. */
function nameKey(name: string): string {
  return name.toLowerCase();
}

async function getNote(db: Db, userId: string, id: string): Promise<Note | undefined> {
  const row = await db
    .selectFrom("notes")
    .select(NOTE_COLUMNS)
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) return undefined;
  return toNote(row, await tagsOfNote(db, userId, row.id));
}

/** Assigns the tags among `tagIds` that the user owns; the others are ignored. */
async function setNoteTags(
  db: Db,
  userId: string,
  noteId: string,
  tagIds: string[],
): Promise<void> {
  if (tagIds.length === 0) return;
  const owned = await db
    .selectFrom("tags")
    .select("id")
    .where("user_id", "=", userId)
    .where("id", "in", tagIds)
    .execute();
  if (owned.length === 0) return;
  await db
    .insertInto("note_tags")
    .values(owned.map((tag) => ({ user_id: userId, note_id: noteId, tag_id: tag.id })))
    .execute();
}

/** A note's tags, in tag order, read through `db` (which may be a transaction). */
async function tagsOfNote(db: Db, userId: string, noteId: string): Promise<Tag[]> {
  const rows = await db
    .selectFrom("note_tags")
    .innerJoin("tags", "tags.id", "note_tags.tag_id")
    .select(["tags.id", "tags.name", "tags.created_at"])
    .where("note_tags.user_id", "=", userId)
    .where("note_tags.note_id", "=", noteId)
    .orderBy("tags.name_key")
    .orderBy("tags.id")
    .execute();
  return rows.map(toTag);
}

function toTag(row: { id: string; name: string; created_at: number }): Tag {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

/** A note from a list's row (a `PageRow`'s counter is not the note's). */
function listedNote([id, title, content, content_text, created_at, updated_at, tags]:
  | ListedNote
  | PageRow): Note {
  return toNote(
    { id, title, content, content_text, created_at, updated_at },
    tags === null
      ? []
      : (JSON.parse(tags) as [string, string, number][]).map(([tagId, name, createdAt]) => ({
          id: tagId,
          name,
          createdAt,
        })),
  );
}

function toNote(row: NoteRow, tags: Tag[]): Note {
  return {
    id: row.id,
    title: row.title,
    content: JSON.parse(row.content),
    contentText: row.content_text,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    tags,
  };
}
