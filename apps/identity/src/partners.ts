import type { IdentityContext } from "./context.ts";
import type { Partner } from "./store/store.ts";

export interface PartnerInput {
  ownerAccountId: string;
  name: string;
  website?: string | undefined;
  description?: string | undefined;
  listed?: boolean | undefined;
}

export type PartnerResult =
  | { ok: true; partner: Partner }
  | { ok: false; code: "INVALID_PARTNER"; reason: string };

const MAX_NAME = 100;
const MAX_DESCRIPTION = 1000;

/** Registers a partner (an API that verifies tokens), owned by an account. */
export async function createPartner(
  ctx: IdentityContext,
  input: PartnerInput,
): Promise<PartnerResult> {
  const name = input.name.trim();
  if (name.length === 0 || name.length > MAX_NAME || /[\p{Cc}\p{Cs}]/u.test(name)) {
    return {
      ok: false,
      code: "INVALID_PARTNER",
      reason: `Name must be 1 to ${MAX_NAME} characters`,
    };
  }
  const website = input.website?.trim() || null;
  if (website !== null && !isHttpUrl(website)) {
    return { ok: false, code: "INVALID_PARTNER", reason: "Website must be an http(s) URL" };
  }
  const description = input.description?.trim() || null;
  if (description !== null && description.length > MAX_DESCRIPTION) {
    return {
      ok: false,
      code: "INVALID_PARTNER",
      reason: `Description must be at most ${MAX_DESCRIPTION} characters`,
    };
  }
  const partner = await ctx.store.createPartner({
    ownerAccountId: input.ownerAccountId,
    name,
    website,
    description,
    listed: input.listed ?? false,
    createdAt: ctx.clock(),
  });
  return { ok: true, partner };
}

function isHttpUrl(value: string): boolean {
  const url = URL.parse(value);
  return (
    url !== null && (url.protocol === "https:" || url.protocol === "http:") && value.length <= 2048
  );
}
