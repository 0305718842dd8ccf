import type { Transaction } from "kysely";
import type { NotesDatabase } from "./schema.ts";

/**
 * What the store holds each user to, so that no user can make a search, or the service, slow for
 * the others: a time budget for each search statement and caps on what a user may store.
 */
export interface NotesLimits {
  /** How long one search statement may run, in ms (search-reader.ts). */
  searchTimeoutMs: number;
  /** Notes a user may keep. */
  maxNotesPerUser: number;
  /** UTF-8 bytes of title, content (as stored) and contentText a user may keep, all notes. */
  maxTextBytesPerUser: number;
}

export const DEFAULT_NOTES_LIMITS: NotesLimits = {
  searchTimeoutMs: 1000,
  maxNotesPerUser: 100_000,
  maxTextBytesPerUser: 100 * 1024 * 1024,
};

/**
 * Why the store refused a request: a create past the user's note cap, a write that would take the
 * user's text past theirs, a search statement past its budget.
 */
export type RefusalCode = "NOTE_LIMIT" | "TEXT_LIMIT" | "SEARCH_TIMEOUT";

/**
 * A refusal, thrown out of the store method (and its transaction, which is rolled back) with a
 * stable `code` and the `limit` it met, for the app to answer (routes/refusals.ts). Thrown rather
 * than returned so the store's methods keep the results their callers already read.
 */
interface Refusal extends Error {
  code: RefusalCode;
  /** The limit met: notes, bytes, or ms. */
  limit: number;
}

export function refusal(code: RefusalCode, limit: number, cause?: unknown): Refusal {
  return Object.assign(new Error(`refused: ${code} (${limit})`, { cause }), { code, limit });
}

const CODES = new Set<unknown>(["NOTE_LIMIT", "TEXT_LIMIT", "SEARCH_TIMEOUT"]);

export function isRefusal(error: unknown): error is Refusal {
  return error instanceof Error && CODES.has((error as { code?: unknown }).code);
}

/**
 * Refuses, inside the transaction `trx` that has just grown one of the user's notes, a write that
 * took the user's text past their cap (a write that does not grow a note is not checked, so a
 * user over a lowered cap can still edit and shrink). The counters are kept by triggers in the
 * same transaction (migrations.ts, 0007 and 0009), and concurrent writes of one user wait for
 * each other on them (PostgreSQL: the user's row stays locked until commit; SQLite: one writer
 * at a time), so each write sees every write committed before it. Creates are held to both caps
 * in their batch (`writeCreates`, notes.ts).
 */
export async function refuseGrowthOverCap(
  trx: Transaction<NotesDatabase>,
  limits: NotesLimits,
  userId: string,
): Promise<void> {
  const counters = await trx
    .selectFrom("users")
    .select("text_bytes")
    .where("id", "=", userId)
    .executeTakeFirst();
  if (Number(counters?.text_bytes) > limits.maxTextBytesPerUser) {
    throw refusal("TEXT_LIMIT", limits.maxTextBytesPerUser);
  }
}

/** The bytes of a note its user's text cap counts, as the triggers count them (migrations.ts, 0007). */
export function noteTextBytes(title: string, content: string, contentText: string): number {
  return Buffer.byteLength(title) + Buffer.byteLength(content) + Buffer.byteLength(contentText);
}
