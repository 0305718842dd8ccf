import type { IdentityContext } from "../context.ts";
import type { KeyRecord, KeyTableName } from "../store/store.ts";
import { displayPrefixOf, generateKey, hashKey, type KeyKind } from "./keys.ts";

const TABLES: Record<KeyKind, KeyTableName> = { user: "user_keys", partner: "partner_keys" };
export const MAX_KEY_NAME_LENGTH = 100;

export type IssueKeyResult =
  | { ok: true; record: KeyRecord; key: string }
  | { ok: false; code: "INVALID_NAME" };

/**
 * Makes a new key for an account (`user`) or a partner (`partner`). The returned `key` is the
 * only time the secret exists outside its owner's hands: only its hash is stored.
 */
export async function issueKey(
  ctx: IdentityContext,
  kind: KeyKind,
  ownerId: string,
  name: string,
): Promise<IssueKeyResult> {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_KEY_NAME_LENGTH || hasControlChars(trimmed)) {
    return { ok: false, code: "INVALID_NAME" };
  }
  const key = generateKey(kind);
  const record = await ctx.store.insertKey(TABLES[kind], {
    ownerId,
    name: trimmed,
    displayPrefix: displayPrefixOf(key),
    secretHash: hashKey(key),
    createdAt: ctx.clock(),
  });
  return { ok: true, record, key };
}

/**
 * Revokes a key. It takes effect on the next request in every process: the verify and mint
 * paths' key caches are checked against the database before each request trusts them
 * (`store/cached-read.ts`).
 */
export async function revokeKey(ctx: IdentityContext, kind: KeyKind, id: string) {
  const table = TABLES[kind];
  if (await ctx.store.revokeKey(table, id, ctx.clock())) return { ok: true } as const;
  const existing = await ctx.store.findKeyById(table, id);
  return existing
    ? ({ ok: false, code: "ALREADY_REVOKED" } as const)
    : ({ ok: false, code: "KEY_NOT_FOUND" } as const);
}

export function listKeys(ctx: IdentityContext, kind: KeyKind, ownerId: string) {
  return ctx.store.listKeys(TABLES[kind], ownerId);
}

function hasControlChars(value: string): boolean {
  return /[\p{Cc}\p{Cs}]/u.test(value);
}
