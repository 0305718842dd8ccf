/** What the notes store hands out: plain data, times in epoch milliseconds. */

export interface User {
  id: string;
  email: string;
  createdAt: number;
}

export interface Tag {
  id: string;
  name: string;
  createdAt: number;
}

/** The agent that wrote a note (Agent Auth Protocol): its AgentPass id and name then. */
export interface NoteAgent {
  id: string;
  name: string;
}

export interface Note {
  id: string;
  title: string;
  /** The note's JSON document. */
  content: unknown;
  contentText: string;
  createdAt: number;
  updatedAt: number;
  /** In tag order: by name ignoring case, then id. */
  tags: Tag[];
  /** The agent that created it, when one did; null when the person's own token did. */
  agent: NoteAgent | null;
}

export interface NoteFields {
  title: string;
  content: unknown;
  contentText: string;
}

export interface ListQuery {
  search?: string | undefined;
  tagId?: string | undefined;
  limit: number;
  offset: number;
}

export interface NotesPage {
  /** Newest-updated first, then by id. */
  notes: Note[];
  /** How many notes match across every page. */
  total: number;
}
