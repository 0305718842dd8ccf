/**
 * The characters that must not reach a terminal as they are: C0 controls and DEL (escape
 * sequences start with ESC), C1 controls (U+009B is a one-character CSI), and the bidirectional
 * formatting characters, which reorder what the operator reads.
 */
const CONTROLS = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

/**
 * `text` with every control and bidi formatting character written as a `\uXXXX` escape, so text
 * a client sent (a user agent, a name) is shown as data and cannot drive the terminal. Inside a
 * JSON string the escape is the same character, so JSON output stays valid and equal.
 *
 * @example escapeControls("Chrome\u001b[2J") // "Chrome\\u001b[2J"
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** A command's output for a terminal: each line escaped (`escapeControls`), the lines kept. */
export function terminalText(text: string): string {
  return text.split("\n").map(escapeControls).join("\n");
}
