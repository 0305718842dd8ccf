/**
 * Characters a name shown to a person must not carry: controls, format characters (bidi
 * overrides and isolates such as U+202E, which draw "buHtiG" as "GitHub"; zero-width joiners
 * and spaces), lone surrogates, line and paragraph separators, and the blank-looking letters
 * (Hangul fillers, the blank braille pattern) that make a name look empty or like another.
 */
const HIDDEN_CHARACTERS = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u115F\u1160\u3164\uFFA0\u2800]/gu;

/** Whether `text` carries a character a person cannot see as it is (`HIDDEN_CHARACTERS`). */
export function hasHiddenCharacters(text: string): boolean {
  // `search` starts at 0 whatever the global pattern's lastIndex: no state between calls.
  return text.search(HIDDEN_CHARACTERS) !== -1;
}

/**
 * A name as it may be shown on a page a person decides on (consent, directory, approval): the
 * hidden characters removed, runs of whitespace as one space, trimmed. Empty when nothing
 * visible is left.
 *
 * @example displayableName("\u202E buHtiG") // "buHtiG", drawn as it is spelled
 */
export function displayableName(name: string): string {
  return name.replace(HIDDEN_CHARACTERS, "").replace(/\s+/gu, " ").trim();
}
