import { v7 } from "uuid";

/**
 * The id of a new note or tag: a UUID of version 7, whose first 48 bits are the time it was made
 * (RFC 9562). Ids made one after another sort one after another, so each insert into the unique
 * index on `id` (and the note-tag keys that start with it) lands on the page the one before it
 * touched. Random version 4 ids put every insert of a batch on a page of its own, and a commit
 * writes every page its batch dirtied (docs/scale.md, "What the profiles found").
 * The time an id carries is the note's `createdAt`, which its owner reads anyway, and an id
 * grants nothing: every read and write is scoped to its owner.
 */
export function newId(): string {
  return v7();
}
