import {
  createPreparedQuery,
  createPreparedRows,
  type PreparedRows,
  type StoreDatabase,
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
  database: Pick<StoreDatabase<NotesDatabase>, "engine" | "handles">,
) {
  const columns = listedNoteColumns(database.engine);
  // One statement per page size (1 to 500), and for each a first page without OFFSET: SQLite
  // plans a page with a literal LIMIT better than one with a bound one, and PostgreSQL plans a
  // statement with a bound OFFSET afresh on every run (its generic plan assumes the offset skips
  // a tenth of the rows, so it never wins), while a first page keeps one plan.
  const pages = new Map<string, PreparedRows<PageRow>>();
  const pageOf = (limit: number, first: boolean) => {
    const key = `${limit}${first ? "" : "+"}`;
    let page = pages.get(key);
    if (!page) {
      page = createPreparedRows<PageRow>(
        database,
        `SELECT ${columns}, (SELECT note_count FROM users WHERE id = ?) AS total
         FROM notes n WHERE n.user_id = ?
         ORDER BY n.updated_at DESC, n.id LIMIT ${limit}${first ? "" : " OFFSET ?"}`,
      );
      pages.set(key, page);
    }
    return page;
  };
  const noteCount = createPreparedQuery<{ note_count: number }>(
    database,
    "SELECT note_count FROM users WHERE id = ?",
  );

  return async (userId: string, query: Pick<ListQuery, "limit" | "offset">): Promise<NotesPage> => {
    const first = query.offset === 0;
    const page = pageOf(Math.trunc(query.limit), first);
    const rows = await (first ? page(userId, userId) : page(userId, userId, query.offset));
    // A page past the last note has no row to carry the counter.
    const total = rows[0]?.total ?? (await noteCount(userId))?.note_count ?? 0;
    return { notes: rows.map(decodeListedNote), total: Number(total) };
  };
}
