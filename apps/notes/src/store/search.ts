import type { Engine } from "@agentpass/db";
import { type RawBuilder, sql } from "kysely";

/** A trigram index can serve a term of at least this many characters. */
const MIN_INDEXED_LENGTH = 3;

/** Splits a search string into its terms: whitespace-separated, empty ones dropped. */
export function searchTerms(search: string | undefined): string[] {
  return search?.split(/\s+/u).filter((term) => term !== "") ?? [];
}

/**
 * The SQL condition "every term occurs, ignoring case, as a substring of the title or the
 * content text" for `terms`, served by each engine's trigram index:
 * - SQLite: terms of 3+ characters go to the FTS5 trigram table in one MATCH (Unicode
 *   case-insensitive); shorter ones, which no trigram can hold, are LIKE filters on the user's
 *   own rows (case-insensitive for ASCII, as SQLite's LIKE is).
 * - PostgreSQL: one LIKE per term on the lowercased text, served by a pg_trgm GIN index on that
 *   expression. It means exactly ILIKE (which lowercases both sides and matches with LIKE in a
 *   multibyte encoding), but the index's rows are rechecked without lowercasing each: 5 against
 *   40 ms for a word with 2,000 hits.
 */
export function searchCondition(engine: Engine, terms: string[]): RawBuilder<boolean> | null {
  if (terms.length === 0) return null;
  if (engine === "postgres") {
    const conditions = terms.map(
      (term) =>
        sql<boolean>`lower(title || E'\n' || content_text) LIKE lower(${likePattern(term)}) ESCAPE '\\'`,
    );
    return sql<boolean>`(${sql.join(conditions, sql` AND `)})`;
  }
  const indexed = terms.filter((term) => [...term].length >= MIN_INDEXED_LENGTH);
  const short = terms.filter((term) => [...term].length < MIN_INDEXED_LENGTH);
  const conditions: RawBuilder<boolean>[] = [];
  if (indexed.length > 0) {
    const match = indexed.map((term) => `"${term.replaceAll('"', '""')}"`).join(" AND ");
    conditions.push(
      sql<boolean>`seq IN (SELECT rowid FROM notes_search WHERE notes_search MATCH ${match})`,
    );
  }
  for (const term of short) {
    const pattern = likePattern(term);
    conditions.push(
      sql<boolean>`(title LIKE ${pattern} ESCAPE '\\' OR content_text LIKE ${pattern} ESCAPE '\\')`,
    );
  }
  return sql<boolean>`(${sql.join(conditions, sql` AND `)})`;
}

function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}
