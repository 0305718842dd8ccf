import { isoTime } from "@agentpass/http";

const quote = JSON.stringify;

/**
 * A note's JSON as a list writes it, up to its tags: `{"id":…,"title":…,"content":…,
 * "contentText":…,"createdAt":"…","updatedAt":"…","tags":`, the same text `JSON.stringify` of
 * the presented note has up to there (presenters.test.ts). `content` is the stored JSON text
 * (schema.ts). Kept with each note as `listed_json` (notes migration 0006), written with every
 * write of the note, so a plain page is its notes' listings and tags joined: the statement reads
 * 3 columns a note instead of 8 and no JSON is built (20 notes: 29 → 14 µs, statement and text).
 * Changing this text means a migration that writes every note's listing again, as 0006 did.
 */
export function noteListing(
  id: string,
  title: string,
  content: string,
  contentText: string,
  createdAt: number,
  updatedAt: number,
): string {
  return `{"id":${quote(id)},"title":${quote(title)},"content":${content},"contentText":${quote(contentText)},"createdAt":"${isoTime(createdAt)}","updatedAt":"${isoTime(updatedAt)}","tags":`;
}
