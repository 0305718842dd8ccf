import { isoTime } from "@agentpass/http";
import type { Note, Tag } from "./store/store.ts";

/** The JSON form of a tag: dates as ISO 8601 with milliseconds, UTC. */
export function presentTag(tag: Tag) {
  return { id: tag.id, name: tag.name, createdAt: isoTime(tag.createdAt) };
}

/** The JSON form of a note, the same in lists and single answers. */
export function presentNote(note: Note) {
  return {
    id: note.id,
    title: note.title,
    content: note.content,
    contentText: note.contentText,
    createdAt: isoTime(note.createdAt),
    updatedAt: isoTime(note.updatedAt),
    tags: note.tags.map(presentTag),
    ...(note.agent && { agent: note.agent }),
  };
}
