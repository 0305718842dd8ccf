import type { Engine, ReadOnlyDb, StoreDatabase } from "@agentpass/db";
import { sql, type Transaction } from "kysely";
import { batchesByKey, type Outcome } from "./batches-by-key.ts";
import { newId } from "./ids.ts";
import { type NotesLimits, noteTextBytes, refusal, refuseGrowthOverCap } from "./limits.ts";
import { decodeNote, decodeTag, NOTE_COLUMNS, type NoteRow, type TagRow } from "./rows.ts";
import type { NotesDatabase } from "./schema.ts";
import type { Note, NoteAgent, NoteFields, Tag } from "./types.ts";

/**
 * SQLite: the `seq` a note of the user takes when it is written (created or updated): the next in
 * their range (migrations.ts, "0004_user_ranges" and "0005_seq_follows_writes"), so rowids run in
 * the order of last writes (search-sqlite.ts reads the newest matches off the end). A user's
 * 2^32-th write would leave the range: the range triggers refuse it (at 10 writes a second,
 * after 13 years).
 */
export function nextNoteSeq(userId: string) {
  return sql<number>`(
    SELECT coalesce((SELECT max(seq) FROM notes WHERE seq BETWEEN r.lo AND r.lo | 4294967295), r.lo) + 1
    FROM (SELECT number << 32 AS lo FROM users WHERE id = ${userId}) r
  )`;
}

/**
 * One note at a time: read, create, update, delete. Each write is one transaction, which the
 * user's caps (`caps`, limits.ts) are checked in before it commits.
 */
export function createNotes(
  database: Pick<StoreDatabase<NotesDatabase>, "db" | "engine" | "write" | "transaction">,
  caps: NotesLimits,
) {
  const reads: ReadOnlyDb<NotesDatabase> = database.db;
  const { engine } = database;
  const createOfUser = batchesByKey(
    (userId: string, creates: NewNote[]) =>
      database.transaction((trx) => writeCreates(trx, engine, caps, userId, creates)),
    { maxItems: 64, maxSize: 1024 * 1024, sizeOf: (create) => create.bytes },
  );

  return {
    getNote(userId: string, id: string): Promise<Note | undefined> {
      return readNote(reads, userId, id);
    },

    /**
     * A new note; refused (`NOTE_LIMIT`, `TEXT_LIMIT`) past the user's caps. The creates of one
     * user asked for together are written together (`writeCreates`).
     */
    createNote(
      userId: string,
      fields: NoteFields,
      tagIds: string[],
      now: number,
      agent: NoteAgent | null = null,
    ): Promise<Note> {
      const content = JSON.stringify(fields.content);
      return createOfUser(userId, {
        row: {
          id: newId(),
          title: fields.title,
          content,
          content_text: fields.contentText,
          created_at: now,
          updated_at: now,
          agent_id: agent?.id ?? null,
          agent_name: agent?.name ?? null,
        },
        bytes: noteTextBytes(fields.title, content, fields.contentText),
        tagIds,
      });
    },

    /**
     * Applies `fields` and, when given, replaces the tag set. Undefined for another's note.
     * Refused (`TEXT_LIMIT`) when it grows the note past the user's text cap: the note is read
     * first, to compare its size before and after (locked on PostgreSQL; on SQLite the write
     * fails if another connection wrote since the read).
     */
    updateNote(
      userId: string,
      id: string,
      fields: Partial<NoteFields>,
      tagIds: string[] | undefined,
      now: number,
    ): Promise<Note | undefined> {
      return database.transaction(async (trx) => {
        let read = trx
          .selectFrom("notes")
          .select(["title", "content", "content_text"])
          .where("user_id", "=", userId)
          .where("id", "=", id);
        if (engine === "postgres") read = read.forUpdate();
        const current = await read.executeTakeFirst();
        if (!current) return undefined;
        const title = fields.title ?? current.title;
        const content =
          fields.content !== undefined ? JSON.stringify(fields.content) : current.content;
        const contentText = fields.contentText ?? current.content_text;
        await trx
          .updateTable("notes")
          .set({
            title,
            content,
            content_text: contentText,
            ...(engine === "sqlite" && { seq: nextNoteSeq(userId) }),
            updated_at: now,
          })
          .where("user_id", "=", userId)
          .where("id", "=", id)
          .execute();
        const grew =
          noteTextBytes(title, content, contentText) >
          noteTextBytes(current.title, current.content, current.content_text);
        if (grew) await refuseGrowthOverCap(trx, caps, userId);
        if (tagIds) {
          await trx
            .deleteFrom("note_tags")
            .where("user_id", "=", userId)
            .where("note_id", "=", id)
            .execute();
          await tagNote(trx, userId, id, await ownedTags(trx, userId, tagIds));
        }
        return readNote(trx, userId, id);
      });
    },

    async deleteNote(userId: string, id: string): Promise<boolean> {
      const result = await database.write((db) =>
        db
          .deleteFrom("notes")
          .where("user_id", "=", userId)
          .where("id", "=", id)
          .executeTakeFirst(),
      );
      return result.numDeletedRows > 0n;
    },
  };
}

/** A note to create: its row, the bytes its user's text cap counts, the tags asked for. */
interface NewNote {
  row: NoteRow;
  bytes: number;
  tagIds: string[];
}

/**
 * Writes the new notes of one user in the transaction `trx`, in the order they were asked for:
 * each is taken if the user's counters with it stay within both caps, and refused otherwise
 * (`NOTE_LIMIT`, then `TEXT_LIMIT`), so a smaller note after a refused one may still fit. The
 * user's row is read first and locked (PostgreSQL; on SQLite the one writer is alone), so
 * concurrent creates of the user, here or on another instance, wait for this commit and then
 * count its notes; creates of different users lock different rows and never wait for each
 * other.
 *
 * All of them take one statement for the notes and one for their tags, and one commit: on
 * PostgreSQL, where a create's statements are round trips and the user's row stays locked until
 * its commit, a user's creates written one by one would go no faster than one commit at a time.
 */
async function writeCreates(
  trx: Transaction<NotesDatabase>,
  engine: Engine,
  caps: NotesLimits,
  userId: string,
  creates: readonly NewNote[],
): Promise<Outcome<Note>[]> {
  let read = trx.selectFrom("users").select(["note_count", "text_bytes"]).where("id", "=", userId);
  if (engine === "postgres") read = read.forUpdate();
  const counters = await read.executeTakeFirst();
  const owned = await ownedTags(trx, userId, [...new Set(creates.flatMap((c) => c.tagIds))]);
  let noteCount = Number(counters?.note_count ?? 0);
  let textBytes = Number(counters?.text_bytes ?? 0);
  const taken: { row: NoteRow; tags: TagRow[] }[] = [];
  const outcomes = creates.map((create): Outcome<Note> => {
    if (noteCount + 1 > caps.maxNotesPerUser) {
      return { ok: false, error: refusal("NOTE_LIMIT", caps.maxNotesPerUser) };
    }
    if (textBytes + create.bytes > caps.maxTextBytesPerUser) {
      return { ok: false, error: refusal("TEXT_LIMIT", caps.maxTextBytesPerUser) };
    }
    noteCount += 1;
    textBytes += create.bytes;
    const tags = owned.filter((tag) => create.tagIds.includes(tag.id));
    taken.push({ row: create.row, tags });
    return { ok: true, value: decodeNote(create.row, tags.map(decodeTag)) };
  });
  if (taken.length === 0) return outcomes;
  await trx
    .insertInto("notes")
    .values(
      taken.map(({ row }, index) => ({
        // SQLite: each next in the user's range, in the order asked (`nextNoteSeq`).
        ...(engine === "sqlite" && { seq: sql<number>`${nextNoteSeq(userId)} + ${index}` }),
        ...row,
        user_id: userId,
      })),
    )
    .execute();
  const links = taken.flatMap(({ row, tags }) =>
    tags.map((tag) => ({ user_id: userId, note_id: row.id, tag_id: tag.id })),
  );
  if (links.length > 0) await trx.insertInto("note_tags").values(links).execute();
  return outcomes;
}

/** The user's note `id` with its tags, read through `db` (which may be a transaction). */
async function readNote(
  db: ReadOnlyDb<NotesDatabase>,
  userId: string,
  id: string,
): Promise<Note | undefined> {
  const row = await db
    .selectFrom("notes")
    .select(NOTE_COLUMNS)
    .where("user_id", "=", userId)
    .where("id", "=", id)
    .executeTakeFirst();
  return row && decodeNote(row, await tagsOfNote(db, userId, row.id));
}

/** A note's tags, in tag order. */
async function tagsOfNote(
  db: ReadOnlyDb<NotesDatabase>,
  userId: string,
  noteId: string,
): Promise<Tag[]> {
  const rows = await db
    .selectFrom("note_tags")
    .innerJoin("tags", "tags.id", "note_tags.tag_id")
    .select(["tags.id", "tags.name", "tags.created_at"])
    .where("note_tags.user_id", "=", userId)
    .where("note_tags.note_id", "=", noteId)
    .orderBy("tags.name_key")
    .orderBy("tags.id")
    .execute();
  return rows.map(decodeTag);
}

/** The tags among `tagIds` that the user owns, in tag order; the others are ignored. */
async function ownedTags(
  trx: Transaction<NotesDatabase>,
  userId: string,
  tagIds: string[],
): Promise<TagRow[]> {
  if (tagIds.length === 0) return [];
  return trx
    .selectFrom("tags")
    .select(["id", "name", "created_at"])
    .where("user_id", "=", userId)
    .where("id", "in", tagIds)
    .orderBy("name_key")
    .orderBy("id")
    .execute();
}

/** Gives the note `noteId` the tags `tags` (`ownedTags`). */
async function tagNote(
  trx: Transaction<NotesDatabase>,
  userId: string,
  noteId: string,
  tags: readonly TagRow[],
): Promise<void> {
  if (tags.length === 0) return;
  await trx
    .insertInto("note_tags")
    .values(tags.map((tag) => ({ user_id: userId, note_id: noteId, tag_id: tag.id })))
    .execute();
}
