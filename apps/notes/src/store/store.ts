import type { StoreDatabase } from "@agentpass/db";
import { sql } from "kysely";
import { createFilteredList } from "./filtered-list.ts";
import { DEFAULT_NOTES_LIMITS, type NotesLimits } from "./limits.ts";
import { createNotes } from "./notes.ts";
import { createPlainList } from "./plain-list.ts";
import type { NotesDatabase } from "./schema.ts";
import { searchTerms } from "./search.ts";
import { createTags } from "./tags.ts";
import type { ListQuery, NotesPage } from "./types.ts";
import { createUsers } from "./users.ts";

export type { ListQuery, Note, NoteAgent, NoteFields, NotesPage, Tag, User } from "./types.ts";

/**
 * The notes API's storage boundary. Every read and write names the user first: one user's
 * notes and tags can never be reached through another user's id. `limits` (defaults
 * `DEFAULT_NOTES_LIMITS`) bound each search statement and what each user may store; a request
 * past them is refused with a `Refusal` (limits.ts). Reads go through the query builder or
 * prepared statements, every write through `database.write`.
 *
 * - users.ts: the users, by email;
 * - notes.ts: one note at a time, and its writes;
 * - tags.ts: a user's tags;
 * - plain-list.ts: the list with neither search nor tag;
 * - filtered-list.ts: the list with a tag or a search, each engine's search in search-sqlite.ts
 *   and search-postgres.ts, run within its budget by search-reader.ts;
 * - rows.ts: the rows all of them read, and their decoders.
 */
export function createNotesStore(
  database: StoreDatabase<NotesDatabase>,
  limits: Partial<NotesLimits> = {},
) {
  const caps: NotesLimits = { ...DEFAULT_NOTES_LIMITS, ...limits };
  const plainList = createPlainList(database);
  const filteredList = createFilteredList(database, caps.searchTimeoutMs);

  return {
    /** Fails (rejects) when the database does not answer a trivial query: the readiness check. */
    async ping(): Promise<void> {
      await sql`SELECT 1`.execute(database.db);
    },
    ...createUsers(database),
    ...createNotes(database, caps),
    ...createTags(database),

    /** A page of the user's notes, newest-updated first, with the total of every page. */
    listNotes(userId: string, query: ListQuery): Promise<NotesPage> {
      return query.tagId || searchTerms(query.search).length > 0
        ? filteredList(userId, query)
        : plainList(userId, query);
    },
  };
}

export type NotesStore = ReturnType<typeof createNotesStore>;
