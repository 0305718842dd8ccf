/** A canonical email, or why the input is not a usable address. */
export type CanonicalEmailResult = { ok: true; email: string } | { ok: false; reason: string };

const MAX_EMAIL_LENGTH = 254;
const MAX_LOCAL_LENGTH = 64;
// Characters an unquoted local part may not hold (RFC 5322 specials), whitespace and controls.
const FORBIDDEN_IN_LOCAL = /[\s\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}"(),:;<>@[\\\]]/u;
const DOMAIN_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * The one canonical form of an email address, the join key shared with partners.
 *
 * Trimmed, NFC, domain lowercased and converted to its IDNA ASCII form, local part
 * ASCII-lowercased only. Unicode case mapping is never applied to the local part (the dotless
 * i and its kin would merge distinct mailboxes); plus-tags and dots are kept, because
 * `a.b+x@` and `ab@` can be different people. AgentPass answers verify with this form; a
 * partner that stores its users' emails in this form matches them exactly.
 *
 * @example
 * canonicalizeEmail(" Ada@BÜCHER.example ") // { ok: true, email: "ada@xn--bcher-kva.example" }
 */
export function canonicalizeEmail(input: unknown): CanonicalEmailResult {
  if (typeof input !== "string") return { ok: false, reason: "Email must be a string" };
  if (input.length > MAX_EMAIL_LENGTH * 4) return { ok: false, reason: "Email is too long" };
  const trimmed = input.trim().normalize("NFC");
  const at = trimmed.lastIndexOf("@");
  if (at <= 0 || at === trimmed.length - 1) {
    return { ok: false, reason: "Email must look like name@example.com" };
  }
  const local = trimmed.slice(0, at).replace(/[A-Z]/g, (c) => c.toLowerCase());
  const domain = toAsciiDomain(trimmed.slice(at + 1));
  if (!isValidLocalPart(local)) return { ok: false, reason: "Email has an invalid name part" };
  if (!domain) return { ok: false, reason: "Email has an invalid domain" };
  const email = `${local}@${domain}`;
  if (email.length > MAX_EMAIL_LENGTH) return { ok: false, reason: "Email is too long" };
  return { ok: true, email };
}

function isValidLocalPart(local: string): boolean {
  if (new TextEncoder().encode(local).length > MAX_LOCAL_LENGTH) return false;
  if (FORBIDDEN_IN_LOCAL.test(local)) return false;
  return !local.startsWith(".") && !local.endsWith(".") && !local.includes("..");
}

// Characters the URL host parser would treat as structure or percent-decode.
const NOT_IN_DOMAIN = /[\s%/?#:@[\]\\^|<>"'`{}]/u;

function toAsciiDomain(domain: string): string | null {
  // IP literals and trailing dots are not mail domains a person signs in with.
  if (NOT_IN_DOMAIN.test(domain) || domain.endsWith(".") || domain.endsWith("。")) return null;
  const ascii = domainToAscii(domain);
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((label) => DOMAIN_LABEL.test(label))) return null;
  // A top-level domain is never all digits, so 127.0.0.1 is refused.
  if (/^\d+$/.test(labels.at(-1) ?? "")) return null;
  return ascii;
}

/** IDNA (UTS #46) to ASCII through the WHATWG URL host parser, present in every runtime. */
function domainToAscii(domain: string): string | null {
  try {
    return new URL(`http://${domain}/`).hostname;
  } catch {
    return null;
  }
}
