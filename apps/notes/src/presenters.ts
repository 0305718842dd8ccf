import type { Note, Tag } from "./store/store.ts";

/** The JSON form of a tag: dates as ISO 8601 with milliseconds, UTC. */
export function presentTag(tag: Tag) {
  return { id: tag.id, name: tag.name, createdAt: new Date(tag.createdAt).toISOString() };
}

/** The JSON form of a note, the same in lists and single answers. */
export function presentNote(note: Note) {
  return {
    id: note.id,
    title: note.title,
    content: note.content,
    contentText: note.contentText,
    createdAt: new Date(note.createdAt).toISOString(),
    updatedAt: new Date(note.updatedAt).toISOString(),
    tags: note.tags.map(presentTag),
  };
}
