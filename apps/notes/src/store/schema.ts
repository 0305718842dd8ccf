import type { Generated } from "kysely";
/** Table shapes as Kysely sees them. Every row is keyed by its user first. */
export interface NotesDatabase {
  /** PostgreSQL only: one row, bumped by each statement that changes users (migration 0010). */
  user_changes: { version: number };
  users: {
    id: string;
    email: string;
    created_at: number;
    note_count: Generated<number>;
    /**
     * UTF-8 bytes of the title, content and content_text of all the user's notes, kept by
     * triggers (migrations.ts, "0007_text_bytes") for the user's text cap.
     */
    text_bytes: Generated<number>;
    /**
     * SQLite only: the user's number, whose range `number << 32` to `number << 32 | 0xFFFFFFFF`
     * holds the `seq` of each of their notes (migrations.ts, "0004_user_ranges").
     */
    number: Generated<number>;
  };
  notes: {
    /**
     * SQLite only: the rowid the full-text index points at, in its user's range, the next of
     * that range on every write of the note (migrations.ts, "0005_seq_follows_writes").
     */
    seq: Generated<number>;
    id: string;
    user_id: string;
    title: string;
    /** The note's JSON document, as `JSON.stringify` wrote it. */
    content: string;
    content_text: string;
    created_at: number;
    updated_at: number;
    /** The agent that created it (migration 0012); null: none did. */
    agent_id: string | null;
    agent_name: string | null;
  };
  tags: {
    id: string;
    user_id: string;
    name: string;
    /** Lowercased name: tag names are unique per user ignoring case. */
    name_key: string;
    created_at: number;
  };
  note_tags: { user_id: string; note_id: string; tag_id: string };
}
