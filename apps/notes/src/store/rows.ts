import type { Engine } from "@agentpass/db";
import type { Note, Tag, User } from "./types.ts";

/**
 * The rows the store reads, one shape each, and the decoder that turns each into what the store
 * hands out, reading its columns by name. Times are epoch milliseconds on both engines
 * (PostgreSQL's bigint is read as a number, `openDatabase`).
 */

export interface UserRow {
  id: string;
  email: string;
  created_at: number;
}

export function decodeUser(row: UserRow): User {
  return { id: row.id, email: row.email, createdAt: row.created_at };
}

export interface TagRow {
  id: string;
  name: string;
  created_at: number;
}

export function decodeTag(row: TagRow): Tag {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

/** A note's own columns; its content is JSON text, as stored. */
export interface NoteRow {
  id: string;
  title: string;
  content: string;
  content_text: string;
  created_at: number;
  updated_at: number;
  agent_id: string | null;
  agent_name: string | null;
}

export const NOTE_COLUMNS = [
  "id",
  "title",
  "content",
  "content_text",
  "created_at",
  "updated_at",
  "agent_id",
  "agent_name",
] as const satisfies readonly (keyof NoteRow)[];

export function decodeNote(row: NoteRow, tags: Tag[]): Note {
  return {
    id: row.id,
    title: row.title,
    content: JSON.parse(row.content),
    contentText: row.content_text,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    tags,
    agent: row.agent_id === null ? null : { id: row.agent_id, name: row.agent_name ?? "" },
  };
}

/**
 * A note as a list reads it (`listedNoteColumns`): its own columns and its tags, as the JSON text
 * of an array of `TagRow`s in tag order, or null for none.
 */
interface ListedNoteRow extends NoteRow {
  tags: string | null;
}

export function decodeListedNote(row: ListedNoteRow): Note {
  const tags = row.tags === null ? [] : (JSON.parse(row.tags) as TagRow[]).map(decodeTag);
  return decodeNote(row, tags);
}

/** A row of a page of a list: a listed note, and how many notes match across every page. */
export interface PageRow extends ListedNoteRow {
  total: number;
}

/**
 * The columns of a `ListedNoteRow` for the note `n`: a page reads its notes with their tags in
 * one statement (each statement is a read transaction of its own, and on SQLite each costs file
 * locks). A note without tags skips the ordered aggregate.
 */
export function listedNoteColumns(engine: Engine): string {
  const tagArray =
    engine === "sqlite"
      ? "json_group_array(json_object('id', t.id, 'name', t.name, 'created_at', t.created_at) ORDER BY t.name_key, t.id)"
      : "json_agg(json_build_object('id', t.id, 'name', t.name, 'created_at', t.created_at) ORDER BY t.name_key, t.id)::text";
  return `${NOTE_COLUMNS.map((column) => `n.${column}`).join(", ")},
    CASE WHEN EXISTS (SELECT 1 FROM note_tags nt WHERE nt.note_id = n.id) THEN
      (SELECT ${tagArray} FROM note_tags nt JOIN tags t ON t.id = nt.tag_id
       WHERE nt.user_id = n.user_id AND nt.note_id = n.id)
    END AS tags`;
}
