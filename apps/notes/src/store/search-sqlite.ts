import { DEADLINE_FUNCTION } from "@agentpass/db";
import { type RawBuilder, sql } from "kysely";
import { listedNoteColumns } from "./rows.ts";
import { likePattern, MIN_INDEXED_LENGTH, type SearchSql } from "./search.ts";
import type { ListQuery } from "./types.ts";

/**
 * SQLite: `terms` of 3+ characters become one query of the FTS5 trigram index `notes_search`
 * (`match`, Unicode case-insensitive), whose matches the notes are joined to (`indexMatches`);
 * shorter ones, which no trigram can hold, are LIKE `conditions` on the user's own rows
 * (case-insensitive for ASCII, as SQLite's LIKE is), after a `within_deadline()` on each row, so
 * such a scan stops at its deadline (search-reader.ts). FTS5's own work, which calls nothing per
 * note, cannot be stopped so: search.ts bounds what a term may ask of it.
 */
export function sqliteSearchSql(terms: string[]): SearchSql {
  const indexed = terms.filter((term) => [...term].length >= MIN_INDEXED_LENGTH);
  const short = terms.filter((term) => [...term].length < MIN_INDEXED_LENGTH);
  const match =
    indexed.length > 0
      ? indexed.map((term) => `"${term.replaceAll('"', '""')}"`).join(" AND ")
      : null;
  const conditions = short.map((term) => {
    const pattern = likePattern(term);
    return sql<boolean>`(n.title LIKE ${pattern} ESCAPE '\\' OR n.content_text LIKE ${pattern} ESCAPE '\\')`;
  });
  // First, so it runs on every row, not only those the LIKEs before it let through.
  if (conditions.length > 0) conditions.unshift(sql<boolean>`${sql.raw(DEADLINE_FUNCTION)}()`);
  return { match, conditions };
}

/**
 * The start of a query's `FROM`: the notes `n` joined to the index's matches of `match` in the
 * user's part of the index, ending in `AND` for the conditions that follow. A join, not `IN`,
 * which would build a temporary index of the matches first.
 */
export function indexMatches(match: string, userId: string): RawBuilder<unknown> {
  return sql`notes_search JOIN notes n ON n.seq = notes_search.rowid
    WHERE ${matching(match, userId)} AND`;
}

/** The index's matches of `match` among the user's notes. */
function matching(match: string, userId: string): RawBuilder<boolean> {
  return sql<boolean>`notes_search MATCH ${match} AND notes_search.rowid ${userRange(userId)}`;
}

/**
 * `BETWEEN` the first and last rowid of the user's range (migrations.ts, 0004): FTS5 seeks to
 * it, so a search reads only its user's part of the index.
 */
function userRange(userId: string): RawBuilder<unknown> {
  return sql`BETWEEN (SELECT number << 32 FROM users WHERE id = ${userId})
    AND (SELECT number << 32 | 4294967295 FROM users WHERE id = ${userId})`;
}

/** The deepest page (`limit + offset`) a search reads from its newest matches. */
const NEWEST_MATCHES_MAX = 100;

const LISTED_COLUMNS = listedNoteColumns("sqlite");

/**
 * The statements of a page of a search by full-text terms alone (no short term, no tag), no
 * deeper than `NEWEST_MATCHES_MAX`, read from the newest matches (`newestMatchesPage`); the
 * total is the index's count of the user's matches, with no note read. Undefined for any other
 * search, which gathers and orders every match (filtered-list.ts).
 */
export function newestMatchesQueries(
  search: SearchSql,
  userId: string,
  query: ListQuery,
): { page: RawBuilder<unknown>; count: RawBuilder<unknown> } | undefined {
  if (!search.match || search.conditions.length > 0 || query.tagId) return undefined;
  if (query.limit + query.offset > NEWEST_MATCHES_MAX) return undefined;
  const matches = matching(search.match, userId);
  return {
    page: newestMatchesPage(matches, userId, query),
    count: sql`SELECT count(*) AS total FROM notes_search WHERE ${matches}`,
  };
}

/**
 * A page of a search from its newest matches. A note takes the next rowid of its user's range on
 * every write (`nextNoteSeq`, notes.ts), so the last `limit + offset` matches in rowid order
 * (read backwards off the end of the user's part of the index, `top`) are, but for notes written
 * in the same millisecond or a clock set back, the page's. The statement proves it before using
 * them:
 * - `edge`: the last of `top` in the list's order (`updated_at` descending, then `id`);
 * - a match ranking above `edge` that `top` lacks has a rowid below all of `top`'s, so `top` is
 *   the page's set unless one of the user's notes ranking above `edge` (a short walk down the
 *   newest-first index, which reads no note) has a rowid below `top`'s lowest. The walk stops
 *   after as many notes as there are rowids from that lowest to the user's last, plus one: more
 *   than that and one of them lies below. It is taken only where it should be short, within
 *   8 × the matches (+ the page) of the newest; `top` holding every match needs no walk.
 * Otherwise every match is looked up and ordered, as in the general statement. Either way the
 * work grows with the page and the matches, never with the user's other notes.
 */
function newestMatchesPage(matches: RawBuilder<boolean>, userId: string, query: ListQuery) {
  const { limit, offset } = query;
  const need = sql.lit(Math.trunc(limit + offset));
  return sql`WITH total AS MATERIALIZED (
      SELECT count(*) AS n FROM notes_search WHERE ${matches}
    ),
    top AS MATERIALIZED (
      SELECT n.updated_at, n.id, n.seq FROM (
        SELECT rowid AS seq FROM notes_search WHERE ${matches}
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
        WHERE ${matches}
        ORDER BY n.updated_at DESC, n.id
        LIMIT (SELECT CASE WHEN yes THEN 0 ELSE ${limit} END FROM proven) OFFSET ${offset}
      )
    )
    SELECT ${sql.raw(LISTED_COLUMNS)}, (SELECT n FROM total) AS total
    FROM page CROSS JOIN notes n ON n.seq = page.seq
    ORDER BY page.updated_at DESC, page.id`;
}
