import type { IdentityContext } from "./context.ts";
import type { Partner } from "./store/store.ts";

export interface PartnerFields {
  name: string;
  website?: string | undefined;
  description?: string | undefined;
  listed?: boolean | undefined;
}

export type PartnerResult =
  | { ok: true; partner: Partner }
  | { ok: false; code: "INVALID_PARTNER"; reason: string };

type CheckedFields = Pick<Partner, "name" | "website" | "description" | "listed">;

const MAX_NAME = 100;
const MAX_DESCRIPTION = 1000;

/** Registers a partner (an API that verifies tokens), owned by an account. */
export async function createPartner(
  ctx: IdentityContext,
  input: PartnerFields & { ownerAccountId: string },
): Promise<PartnerResult> {
  const checked = checkPartnerFields(input);
  if (!checked.ok) return checked;
  const partner = await ctx.store.createPartner({
    ownerAccountId: input.ownerAccountId,
    ...checked.fields,
    createdAt: ctx.clock(),
  });
  return { ok: true, partner };
}

/** Changes a partner's public description; its id and keys stay. */
export async function updatePartner(
  ctx: IdentityContext,
  partner: Partner,
  input: PartnerFields,
): Promise<PartnerResult> {
  const checked = checkPartnerFields(input);
  if (!checked.ok) return checked;
  await ctx.store.updatePartner(partner.id, checked.fields);
  return { ok: true, partner: { ...partner, ...checked.fields } };
}

function checkPartnerFields(
  input: PartnerFields,
): { ok: true; fields: CheckedFields } | { ok: false; code: "INVALID_PARTNER"; reason: string } {
  const invalid = (reason: string) => ({ ok: false, code: "INVALID_PARTNER", reason }) as const;
  const name = input.name.trim();
  if (name.length === 0 || name.length > MAX_NAME || /[\p{Cc}\p{Cs}]/u.test(name)) {
    return invalid(`Name must be 1 to ${MAX_NAME} characters`);
  }
  const website = input.website?.trim() || null;
  if (website !== null && !isHttpUrl(website)) {
    return invalid("Website must be an http(s) URL");
  }
  const description = input.description?.trim() || null;
  if (
    description !== null &&
    (description.length > MAX_DESCRIPTION || /[\p{Cs}\0]/u.test(description))
  ) {
    return invalid(`Description must be at most ${MAX_DESCRIPTION} characters`);
  }
  return { ok: true, fields: { name, website, description, listed: input.listed ?? false } };
}

function isHttpUrl(value: string): boolean {
  const url = URL.parse(value);
  return (
    url !== null && (url.protocol === "https:" || url.protocol === "http:") && value.length <= 2048
  );
}
