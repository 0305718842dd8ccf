import type { Engine } from "@agentpass/db";
import { type RawBuilder, sql } from "kysely";

/** A trigram index can serve a term of at least this many characters. */
const MIN_INDEXED_LENGTH = 3;

/** Splits a search string into its terms: whitespace-separated, empty ones dropped. */
export function searchTerms(search: string | undefined): string[] {
  return search?.split(/\s+/u).filter((term) => term !== "") ?? [];
}

/**
 * A search as SQL over the notes `n`: "every term occurs, ignoring case, as a substring of the
 * title or the content text", served by each engine's trigram index.
 * - SQLite: terms of 3+ characters become one FTS5 query (`match`, Unicode case-insensitive)
 *   whose matches the notes are joined to; shorter ones, which no trigram can hold, are LIKE
 *   `conditions` on the user's own rows (case-insensitive for ASCII, as SQLite's LIKE is).
 * - PostgreSQL: one LIKE condition per term on the lowercased text, served by a pg_trgm GIN
 *   index on that expression. It means exactly ILIKE (which lowercases both sides and matches
 *   with LIKE in a multibyte encoding), but the index's rows are rechecked without lowercasing
 *   each: 5 against 40 ms for a word with 2,000 hits.
 */
export interface SearchSql {
  /** The FTS5 query of `notes_search` (SQLite), or null when no term is long enough. */
  match: string | null;
  /** Conditions each matching note meets besides `match`. */
  conditions: RawBuilder<boolean>[];
}

/** `terms` as SQL (see `SearchSql`); null for no terms. */
export function searchSql(engine: Engine, terms: string[]): SearchSql | null {
  if (terms.length === 0) return null;
  if (engine === "postgres") {
    const conditions = terms.map(
      (term) =>
        sql<boolean>`lower(n.title || E'\n' || n.content_text) LIKE lower(${likePattern(term)}) ESCAPE '\\'`,
    );
    return { match: null, conditions };
  }
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
  return { match, conditions };
}

function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}
