import { createRowsReader, type StoreDatabase } from "@agentpass/db";
import { type CompiledQuery, sql } from "kysely";
import { decodeListedNote, listedNoteColumns, type PageRow } from "./rows.ts";
import type { NotesDatabase } from "./schema.ts";
import { searchTerms } from "./search.ts";
import { postgresSearchSql } from "./search-postgres.ts";
import { createSearchReader } from "./search-reader.ts";
import { indexMatches, newestMatchesQueries, sqliteSearchSql } from "./search-sqlite.ts";
import type { ListQuery, NotesPage } from "./types.ts";

const LISTED_COLUMNS = {
  sqlite: listedNoteColumns("sqlite"),
  postgres: listedNoteColumns("postgres"),
};

/**
 * The statements of a list with a tag or a search. `page` reads the page's notes (`PageRow`s) in
 * one statement, so the page and its total come from one snapshot; `count` compiles the
 * statement that reads the total alone, for a page past the last match (which has no row to
 * carry it).
 *
 * The matches are gathered once (their times and ids), ordered and counted, and only the page's
 * notes are read in full. On SQLite the notes are joined to the full-text index's matches in the
 * user's part of the index, and a search by full-text terms alone to a shallow page reads its
 * newest matches instead (search-sqlite.ts). On PostgreSQL the matches carry no LIMIT, so its
 * planner takes the trigram index rather than walking the newest-first one.
 */
export function filteredListQueries(
  database: Pick<StoreDatabase<NotesDatabase>, "db" | "engine">,
  userId: string,
  query: ListQuery,
): { page: CompiledQuery; count: () => CompiledQuery } {
  const { db, engine } = database;
  const terms = searchTerms(query.search);
  const search =
    terms.length === 0
      ? null
      : engine === "sqlite"
        ? sqliteSearchSql(terms)
        : postgresSearchSql(terms);
  const newest = search && engine === "sqlite" && newestMatchesQueries(search, userId, query);
  if (newest) return { page: newest.page.compile(db), count: () => newest.count.compile(db) };
  const source = search?.match ? indexMatches(search.match, userId) : sql`notes n WHERE`;
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
      SELECT ${sql.raw(LISTED_COLUMNS[engine])}, (SELECT count(*) FROM matches) AS total
      FROM page JOIN notes n ON n.id = page.id
      ORDER BY page.updated_at DESC, page.id`.compile(db),
    count: () => sql`${matches} SELECT count(*) AS total FROM matches`.compile(db),
  };
}

/**
 * The list with a tag or a search (`filteredListQueries`); a search's statements run within
 * their budget of `searchTimeoutMs` each (search-reader.ts).
 */
export function createFilteredList(
  database: Pick<StoreDatabase<NotesDatabase>, "db" | "engine" | "handles">,
  searchTimeoutMs: number,
) {
  const readRows = createRowsReader(database);
  const readSearch = createSearchReader(database, searchTimeoutMs);
  return async (userId: string, query: ListQuery): Promise<NotesPage> => {
    const { page, count } = filteredListQueries(database, userId, query);
    const read = searchTerms(query.search).length > 0 ? readSearch : readRows;
    const rows = await read<PageRow>(page);
    if (rows.length > 0 || query.offset === 0) {
      return { notes: rows.map(decodeListedNote), total: Number(rows[0]?.total ?? 0) };
    }
    // A page past the last match has no row to carry the total.
    const [counted] = await read<{ total: number }>(count());
    return { notes: [], total: Number(counted?.total ?? 0) };
  };
}
