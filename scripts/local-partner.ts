import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { IdentityContext } from "../apps/identity/src/context.ts";
import { createAccount, findAccountByEmail } from "../apps/identity/src/domain/accounts.ts";
import { issueKey } from "../apps/identity/src/domain/credentials.ts";
import { hashKey } from "../apps/identity/src/domain/keys.ts";
import { addPartnerResource } from "../apps/identity/src/domain/oauth.ts";
import { createPartner } from "../apps/identity/src/domain/partners.ts";

const OPERATOR_EMAIL = "notes-operator@agentpass.local";
const KEY_FILE = "notes-partner-key";

/**
 * Makes sure the local identity service knows the notes API as a listed partner with a working
 * partner key, and returns that key. The key is kept in `<dataDir>/notes-partner-key` (mode
 * 0600) so restarts reuse it; a revoked or lost key is replaced by a new one.
 */
export async function ensureNotesPartner(
  ctx: IdentityContext,
  dataDir: string,
  notesUrl: string,
): Promise<string> {
  const keyFile = join(dataDir, KEY_FILE);
  const partnerId = await findOrCreatePartner(ctx, notesUrl);
  // Its REST API and its MCP endpoint are its resources (RFC 8707): an OAuth client asking for
  // either gets tokens bound to it.
  for (const resource of [notesUrl, `${notesUrl}/mcp`]) {
    const added = await addPartnerResource(ctx, partnerId, resource);
    if (!added.ok) throw new Error(`cannot register the notes resource ${resource}: ${added.code}`);
  }
  const saved = readSavedKey(keyFile);
  if (saved) {
    const checked = await ctx.store.beginHotRead();
    const stored = await ctx.store.findKeyByHash(checked, "partner_keys", hashKey(saved));
    if (stored && stored.revokedAt === null && stored.ownerId === partnerId) return saved;
  }
  const issued = await issueKey(ctx, "partner", partnerId, "npm start");
  if (!issued.ok) throw new Error(`cannot issue the notes API's partner key: ${issued.code}`);
  writeFileSync(keyFile, `${issued.key}\n`, { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return issued.key;
}

async function findOrCreatePartner(ctx: IdentityContext, notesUrl: string): Promise<string> {
  let owner = await findAccountByEmail(ctx, OPERATOR_EMAIL);
  if (!owner.ok) owner = await createAccount(ctx, OPERATOR_EMAIL);
  if (!owner.ok) throw new Error(`cannot create the notes operator account: ${owner.code}`);
  const [existing] = await ctx.store.listPartnersOwnedBy(owner.account.id);
  if (existing) return existing.id;
  const created = await createPartner(ctx, {
    ownerAccountId: owner.account.id,
    name: "Notes (AgentPass reference API)",
    website: notesUrl,
    description: "Notes, tags and search for agents, authenticated through AgentPass.",
    listed: true,
  });
  if (!created.ok) throw new Error(created.reason);
  return created.partner.id;
}

function readSavedKey(path: string): string | null {
  try {
    return readFileSync(path, "utf8").trim() || null;
  } catch {
    return null;
  }
}
