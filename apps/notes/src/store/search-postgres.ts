import { sql } from "kysely";
import { likePattern, type SearchSql } from "./search.ts";

/**
 * PostgreSQL: `terms` as one LIKE condition each on the note's lowercased text, served by a
 * pg_trgm GIN index on that expression (migrations.ts, "0003_folded_search"). It means exactly
 * ILIKE (which lowercases both sides and matches with LIKE in a multibyte encoding), but the
 * index's rows are rechecked without lowercasing each again.
 */
export function postgresSearchSql(terms: string[]): SearchSql {
  const conditions = terms.map(
    (term) =>
      sql<boolean>`lower(n.title || E'\n' || n.content_text) LIKE lower(${likePattern(term)}) ESCAPE '\\'`,
  );
  return { match: null, conditions };
}
