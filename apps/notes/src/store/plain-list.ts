import {
  createPreparedQuery,
  createPreparedRows,
  type OpenedDatabase,
  type PreparedRows,
} from "@agentpass/db";
import { decodeListedNote, listedNoteColumns, type PageRow } from "./rows.ts";
import type { NotesDatabase } from "./schema.ts";
import type { ListQuery, NotesPage } from "./types.ts";

/**
 * The plain list: every note of the user, newest-updated first, with neither search nor tag —
 * the list an agent calls most. A page is one prepared statement: its notes with their tags,
 * and the total, which is the user's note counter (kept by triggers, migrations.ts 0002), so no
 * page counts the user's notes.
 */
export function createPlainList(
  database: Pick<OpenedDatabase<NotesDatabase>, "engine" | "sqlite" | "pool">,
) {
  const columns = listedNoteColumns(database.engine);
  // One statement per page size (1 to 500): SQLite plans a page with a literal LIMIT better than
  // one with a bound one.
  const pages = new Map<number, PreparedRows<PageRow>>();
  const pageOf = (limit: number) => {
    let page = pages.get(limit);
    if (!page) {
      page = createPreparedRows<PageRow>(
        database,
        `SELECT ${columns}, (SELECT note_count FROM users WHERE id = ?) AS total
         FROM notes n WHERE n.user_id = ?
         ORDER BY n.updated_at DESC, n.id LIMIT ${limit} OFFSET ?`,
      );
      pages.set(limit, page);
    }
    return page;
  };
  const noteCount = createPreparedQuery<{ note_count: number }>(
    database,
    "SELECT note_count FROM users WHERE id = ?",
  );

  return async (userId: string, query: Pick<ListQuery, "limit" | "offset">): Promise<NotesPage> => {
    const rows = await pageOf(Math.trunc(query.limit))(userId, userId, query.offset);
    // A page past the last note has no row to carry the counter.
    const total = rows[0]?.total ?? (await noteCount(userId))?.note_count ?? 0;
    return { notes: rows.map(decodeListedNote), total: Number(total) };
  };
}
