import type { RawBuilder } from "kysely";

/** A trigram index can serve a term of at least this many characters. */
export const MIN_INDEXED_LENGTH = 3;

/**
 * What a search may ask, so its work stays bounded: each term is one more condition on every
 * candidate note; each term shorter than `MIN_INDEXED_LENGTH` is a LIKE over the whole text of
 * every note the other terms leave (of all the user's notes, when they are all short); the work
 * of matching a term grows with its length; and a term that repeats a trigram makes that work
 * grow with the product of the text and the repeats: SQLite's FTS5 checks a phrase by walking
 * the positions of each of its trigrams, once per place the trigram takes in the phrase, inside
 * one step that nothing can interrupt (64 letters `a…ab` over a note of nothing but `a` walk
 * every position of the note 62 times). With each trigram at most `trigramRepeats` times in a
 * term, a phrase costs at most that many walks of the note's positions, linear in its text.
 */
export const SEARCH_LIMITS = { terms: 10, shortTerms: 3, termLength: 64, trigramRepeats: 3 };

/** Splits a search string into its terms: whitespace-separated, empty ones dropped. */
export function searchTerms(search: string | undefined): string[] {
  return search?.split(/\s+/u).filter((term) => term !== "") ?? [];
}

/** Why `terms` ask more than a search may (`SEARCH_LIMITS`), as a validation message; else undefined. */
export function searchLimitProblem(terms: string[]): string | undefined {
  if (terms.length > SEARCH_LIMITS.terms) return `must have at most ${SEARCH_LIMITS.terms} terms`;
  const lengths = terms.map((term) => [...term].length);
  if (lengths.filter((length) => length < MIN_INDEXED_LENGTH).length > SEARCH_LIMITS.shortTerms) {
    return `must have at most ${SEARCH_LIMITS.shortTerms} terms shorter than ${MIN_INDEXED_LENGTH} characters`;
  }
  if (lengths.some((length) => length > SEARCH_LIMITS.termLength)) {
    return `must have no term longer than ${SEARCH_LIMITS.termLength} characters`;
  }
  if (terms.some((term) => mostRepeatedTrigram(term) > SEARCH_LIMITS.trigramRepeats)) {
    return `must have no term repeating the same ${MIN_INDEXED_LENGTH} characters more than ${SEARCH_LIMITS.trigramRepeats} times`;
  }
  return undefined;
}

/** How many times the most repeated trigram of `term` occurs in it, ignoring case. */
function mostRepeatedTrigram(term: string): number {
  const characters = [...term.toLowerCase()];
  const counts = new Map<string, number>();
  let most = 0;
  for (let at = 0; at + MIN_INDEXED_LENGTH <= characters.length; at++) {
    const trigram = characters.slice(at, at + MIN_INDEXED_LENGTH).join("");
    const count = (counts.get(trigram) ?? 0) + 1;
    counts.set(trigram, count);
    most = Math.max(most, count);
  }
  return most;
}

/**
 * A search as SQL over the notes `n`: "every term occurs, ignoring case, as a substring of the
 * title or the content text", served by each engine's trigram index (search-sqlite.ts,
 * search-postgres.ts).
 */
export interface SearchSql {
  /** The FTS5 query of `notes_search` (SQLite), or null: no term is long enough, or PostgreSQL. */
  match: string | null;
  /** Conditions each matching note meets besides `match`. */
  conditions: RawBuilder<boolean>[];
}

/** `term` as a LIKE pattern matching it anywhere, with `\` escaping. */
export function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}
