import type { Needs } from "../context.ts";
import { randomSecret } from "../infra/crypto.ts";
import type { FetchFailure, FetchResult } from "../infra/fetch-public-document.ts";
import type { Partner, PartnerDetails } from "../store/store.ts";
import { hasHiddenCharacters } from "./display-names.ts";
import { isId } from "./ids.ts";

export interface PartnerFields {
  name: string;
  website?: string | undefined;
  description?: string | undefined;
  listed?: boolean | undefined;
}

type PartnerResult =
  | { ok: true; partner: Partner }
  | { ok: false; code: "INVALID_PARTNER"; reason: string };

const MAX_NAME = 100;
const MAX_DESCRIPTION = 1000;

/** Registers a partner (an API that verifies tokens), owned by an account. */
export async function createPartner(
  ctx: Needs<"store" | "clock">,
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

/**
 * Changes a partner's public description; its id and keys stay. A website on another origin
 * loses the verification: the proof was made for the old one.
 */
export async function updatePartner(
  ctx: Needs<"store">,
  partner: Partner,
  input: PartnerFields,
): Promise<PartnerResult> {
  const checked = checkPartnerFields(input);
  if (!checked.ok) return checked;
  const clearSiteVerification = originOf(checked.fields.website) !== originOf(partner.website);
  await ctx.store.updatePartner(partner.id, checked.fields, { clearSiteVerification });
  const cleared = clearSiteVerification ? { siteVerifiedAt: null, siteVerifiedOrigin: null } : {};
  return { ok: true, partner: { ...partner, ...checked.fields, ...cleared } };
}

/** The partner `id` when `accountId` owns it; else null. */
export async function findOwnedPartner(
  ctx: Needs<"store">,
  accountId: string,
  id: string,
): Promise<Partner | null> {
  const partner = isId(id) ? await ctx.store.findPartner(id) : undefined;
  return partner?.ownerAccountId === accountId ? partner : null;
}

/** The partners an account owns, oldest first. */
export function listOwnedPartners(ctx: Needs<"store">, accountId: string): Promise<Partner[]> {
  return ctx.store.listPartnersOwnedBy(accountId);
}

/**
 * Deletes a partner `accountId` owns, with its keys, usage counts and resource URLs (freed by a
 * trigger, migration 0015: no token can be bound to a partner that is gone). Its keys are gone, so
 * verifications with them are refused from the next request on, in every process (the key caches
 * are checked as for a revocation). Each person whose email it saw keeps that record, with the
 * partner's name as it was (migration 0010): this instance's pending counts are written first.
 * False: no such partner of that account.
 */
export async function deletePartner(
  ctx: Needs<"store" | "usage">,
  accountId: string,
  id: string,
): Promise<boolean> {
  if (!isId(id)) return false;
  await ctx.usage.flush();
  return ctx.store.deletePartner(id, accountId);
}

/** Where a partner publishes its site token, on its website's origin. */
const SITE_VERIFICATION_PATH = "/.well-known/agentpass-verification.txt";

/** Fetches a document by URL under the service's fetch policy (`fetchPublicDocument`). */
export type FetchDocument = (url: URL) => Promise<FetchResult>;

export type SiteCheckResult =
  | { ok: true; origin: string }
  | {
      ok: false;
      code: "no_website" | "token_not_found" | FetchFailure;
      /** The URL fetched (null with `no_website`). */
      url: URL | null;
      /** The HTTP status of a `redirect` or `not_ok` answer. */
      status?: number | undefined;
    };

/** The URL the partner's token must be served at, or null without a website. */
export function siteVerificationUrl(partner: Partner): URL | null {
  const origin = originOf(partner.website);
  return origin === null ? null : new URL(SITE_VERIFICATION_PATH, origin);
}

/**
 * Whether the partner proved it controls its website's origin. The origin verified is compared,
 * not only cleared on change: a check that finishes after the website changed proves nothing
 * about the new one.
 */
export function isSiteVerified(partner: Partner): boolean {
  return (
    partner.siteVerifiedAt !== null &&
    partner.siteVerifiedOrigin !== null &&
    partner.siteVerifiedOrigin === originOf(partner.website)
  );
}

/**
 * The token this partner publishes on its website: random, one per partner, made the first time
 * it is asked for (partners made before migration 0007 have none).
 */
export async function partnerSiteToken(ctx: Needs<"store">, partner: Partner): Promise<string> {
  if (partner.siteToken !== null) return partner.siteToken;
  const fresh = `agentpass-site-verification=${randomSecret()}`;
  return (await ctx.store.keepPartnerSiteToken(partner.id, fresh)) ?? fresh;
}

/**
 * Fetches the partner's verification file once and records the outcome: verified for the
 * website's origin when a line of the file, trimmed, is exactly the partner's token; else not
 * verified (the last check decides, so a token taken down ends the verification).
 */
export async function checkPartnerSite(
  ctx: Needs<"store" | "clock">,
  partner: Partner,
  fetchDocument: FetchDocument,
): Promise<SiteCheckResult> {
  const url = siteVerificationUrl(partner);
  if (url === null) return { ok: false, code: "no_website", url };
  const token = await partnerSiteToken(ctx, partner);
  const fetched = await fetchDocument(url);
  const found = fetched.ok && fetched.body.split("\n").some((line) => line.trim() === token);
  const verified = found ? { origin: url.origin, at: ctx.clock() } : null;
  await ctx.store.recordPartnerSiteCheck(partner.id, verified);
  if (verified) return { ok: true, origin: verified.origin };
  if (fetched.ok) return { ok: false, code: "token_not_found", url };
  return { ok: false, code: fetched.reason, url, status: fetched.status };
}

function checkPartnerFields(
  input: PartnerFields,
): { ok: true; fields: PartnerDetails } | { ok: false; code: "INVALID_PARTNER"; reason: string } {
  const invalid = (reason: string) => ({ ok: false, code: "INVALID_PARTNER", reason }) as const;
  const name = input.name.trim();
  if (name.length === 0 || name.length > MAX_NAME) {
    return invalid(`Name must be 1 to ${MAX_NAME} characters`);
  }
  // People decide on this name (consent, directory): what they read must be what it says.
  if (hasHiddenCharacters(name)) {
    return invalid("Name must not contain invisible or direction-changing characters");
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

function originOf(website: string | null): string | null {
  return website === null ? null : (URL.parse(website)?.origin ?? null);
}

/** A listed partner as the public directory shows it. */
export interface DirectoryEntry {
  partner: Partner;
  /** The partner proved it controls its website. */
  verified: boolean;
  /**
   * The name of a listed partner with a verified website that this one's name looks like, when
   * this one is not verified on that same website; null otherwise.
   */
  resembles: string | null;
}

/**
 * The public directory: listed partners by name, with what a reader needs to not be fooled by a
 * partner named like another. A name resembles a verified partner's when their skeletons
 * (`nameSkeleton`) are equal or close: at most 1 edit for skeletons of 4 to 8 characters, 2 from
 * 9 on, none below 4 (where one edit makes another word). Two partners verified on different
 * websites are both flagged: the directory cannot tell which is the real one; the website tells.
 */
export async function listDirectory(ctx: Needs<"store">): Promise<DirectoryEntry[]> {
  const partners = await ctx.store.listListedPartners();
  const originals = partners
    .filter(isSiteVerified)
    .map((partner) => ({ partner, skeleton: nameSkeleton(partner.name) }))
    .filter((original) => original.skeleton.length > 0);
  return partners.map((partner) => {
    const verified = isSiteVerified(partner);
    const skeleton = nameSkeleton(partner.name);
    let resembles: string | null = null;
    let closest = Number.POSITIVE_INFINITY;
    for (const original of originals) {
      // The same website (the partner itself, or another entry of the same owner of that site).
      if (verified && partner.siteVerifiedOrigin === original.partner.siteVerifiedOrigin) continue;
      const limit = original.skeleton.length < 4 ? 0 : original.skeleton.length < 9 ? 1 : 2;
      const distance = editDistance(skeleton, original.skeleton, limit);
      if (distance < closest) {
        closest = distance;
        resembles = original.partner.name;
      }
    }
    return { partner, verified, resembles };
  });
}

/** Characters drawn alike: digits that pass for letters, and Cyrillic and Greek look-alikes. */
const LOOK_ALIKES: Record<string, string> = {
  "0": "o",
  "1": "l",
  i: "l",
  "3": "e",
  "5": "s",
  "8": "b",
  а: "a",
  е: "e",
  о: "o",
  р: "p",
  с: "c",
  у: "y",
  х: "x",
  і: "l",
  ј: "j",
  ѕ: "s",
  һ: "h",
  α: "a",
  ο: "o",
  ν: "v",
};

/**
 * What a name looks like, for comparing names by eye: NFKC (full-width and styled letters
 * become plain ones), lower case, letters and digits only, look-alike characters and pairs
 * ("rn" for "m", "vv" for "w") as one. "G1tHub", "Git Hub" and "GitHub" are all "glthub".
 */
function nameSkeleton(name: string): string {
  const folded = name
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, "");
  return Array.from(folded, (character) => LOOK_ALIKES[character] ?? character)
    .join("")
    .replaceAll("rn", "m")
    .replaceAll("vv", "w");
}

/**
 * Edits (insert, delete, substitute, or swap two neighbours) from `a` to `b`, by code point;
 * Infinity once it must exceed `limit`, so long unrelated names cost a few rows, not a table.
 */
function editDistance(a: string, b: string, limit: number): number {
  const x = Array.from(a);
  const y = Array.from(b);
  if (Math.abs(x.length - y.length) > limit) return Number.POSITIVE_INFINITY;
  const at = (row: number[], k: number) => row[k] ?? Number.POSITIVE_INFINITY;
  let twoBack: number[] = [];
  let previous = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const current = [i];
    for (let j = 1; j <= y.length; j++) {
      let edits = Math.min(
        at(previous, j) + 1,
        at(current, j - 1) + 1,
        at(previous, j - 1) + (x[i - 1] === y[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) {
        edits = Math.min(edits, at(twoBack, j - 2) + 1);
      }
      current.push(edits);
    }
    if (Math.min(...current) > limit) return Number.POSITIVE_INFINITY;
    twoBack = previous;
    previous = current;
  }
  const distance = previous[y.length] ?? Number.POSITIVE_INFINITY;
  return distance <= limit ? distance : Number.POSITIVE_INFINITY;
}
