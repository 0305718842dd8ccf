import type { Needs } from "../context.ts";
import type { KeyRecord, KeyTableName } from "../store/store.ts";
import { isId } from "./ids.ts";
import { displayPrefixOf, generateKey, hashKey, type KeyKind } from "./keys.ts";

const TABLES: Record<KeyKind, KeyTableName> = { user: "user_keys", partner: "partner_keys" };
const MAX_KEY_NAME_LENGTH = 100;

type IssueKeyResult =
  | { ok: true; record: KeyRecord; key: string }
  | { ok: false; code: "INVALID_NAME" };

type RenameKeyResult =
  | { ok: true; name: string }
  | { ok: false; code: "INVALID_NAME" | "KEY_NOT_FOUND" };

/**
 * Makes a new key for an account (`user`) or a partner (`partner`). The returned `key` is the
 * only time the secret exists outside its owner's hands: only its hash is stored.
 */
export async function issueKey(
  ctx: Needs<"store" | "clock">,
  kind: KeyKind,
  ownerId: string,
  name: string,
): Promise<IssueKeyResult> {
  const trimmed = keyNameOf(name);
  if (trimmed === null) return { ok: false, code: "INVALID_NAME" };
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
 * (`createReadCaches`, `@agentpass/db`).
 */
export async function revokeKey(ctx: Needs<"store" | "clock">, kind: KeyKind, id: string) {
  const table = TABLES[kind];
  if (await ctx.store.revokeKey(table, id, ctx.clock())) return { ok: true } as const;
  const existing = await ctx.store.findKeyById(table, id);
  return existing
    ? ({ ok: false, code: "ALREADY_REVOKED" } as const)
    : ({ ok: false, code: "KEY_NOT_FOUND" } as const);
}

/**
 * The keys of an account (`user`) or a partner (`partner`), newest first. This instance's
 * pending last-use times are written first, so a key just used shows it.
 */
export async function listKeys(
  ctx: Needs<"store" | "keyUsage">,
  kind: KeyKind,
  ownerId: string,
): Promise<KeyRecord[]> {
  await ctx.keyUsage.flush();
  return ctx.store.listKeys(TABLES[kind], ownerId);
}

/** The key `id` when it belongs to `ownerId` (an account, or a partner); else null. */
export async function findOwnedKey(
  ctx: Needs<"store">,
  kind: KeyKind,
  ownerId: string,
  id: string,
): Promise<KeyRecord | null> {
  const key = isId(id) ? await ctx.store.findKeyById(TABLES[kind], id) : undefined;
  return key?.ownerId === ownerId ? key : null;
}

/** Gives a key of `ownerId` another name, under the rules of `issueKey`. */
export async function renameKey(
  ctx: Needs<"store">,
  kind: KeyKind,
  ownerId: string,
  id: string,
  name: string,
): Promise<RenameKeyResult> {
  const trimmed = keyNameOf(name);
  if (trimmed === null) return { ok: false, code: "INVALID_NAME" };
  const renamed =
    isId(id) && (await ctx.store.renameKey(TABLES[kind], { id, ownerId, name: trimmed }));
  return renamed ? { ok: true, name: trimmed } : { ok: false, code: "KEY_NOT_FOUND" };
}

/** A key's name as kept: trimmed, 1 to 100 characters, no control characters; else null. */
function keyNameOf(name: string): string | null {
  const trimmed = name.trim();
  const valid =
    trimmed.length > 0 && trimmed.length <= MAX_KEY_NAME_LENGTH && !/[\p{Cc}\p{Cs}]/u.test(trimmed);
  return valid ? trimmed : null;
}
