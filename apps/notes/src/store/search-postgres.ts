import { sql } from "kysely";
import { likePattern, type SearchSql } from "./search.ts";

/**
 * PostgreSQL: `terms` as one LIKE condition each on the note's stored lowercased text
 * (`search_text`, a generated column with a pg_trgm GIN index: migrations.ts,
 * "0011_search_text"). It means exactly ILIKE (which lowercases both sides and matches with LIKE
 * in a multibyte encoding), but no candidate row is lowercased again to be rechecked.
 */
export function postgresSearchSql(terms: string[]): SearchSql {
  const conditions = terms.map(
    (term) => sql<boolean>`n.search_text LIKE lower(${likePattern(term)}) ESCAPE '\\'`,
  );
  return { match: null, conditions };
}
