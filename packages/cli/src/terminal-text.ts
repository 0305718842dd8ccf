/**
 * A server's string as it may reach the terminal: no control or bidi characters (which could
 * rewrite what the person reads), at most `max` characters.
 */
export function printable(text: unknown, max: number): string {
  return String(text)
    .replace(/[\p{Cc}\p{Cf}]/gu, "")
    .slice(0, max);
}
