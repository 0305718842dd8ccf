/** Markup already escaped (or written by us): `html` inserts it as it is. */
export class SafeHtml {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  toString(): string {
    return this.#text;
  }
}

/** What a page template may hold: text is escaped, `SafeHtml` kept, nothing shown for no value. */
type HtmlValue = string | number | boolean | null | undefined | SafeHtml | HtmlValue[];

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text as HTML: the five characters that could end an element or an attribute, escaped. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => ESCAPES[character] as string);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.toString();
  if (Array.isArray(value)) return value.map(render).join("");
  if (typeof value === "string") return escapeHtml(value);
  if (typeof value === "number") return String(value);
  return "";
}

/**
 * The pages' template tag: every value is escaped unless it is markup made by `html` itself, so a
 * name, an address or a URL someone typed can never become markup. Lists are joined; `false`,
 * `null` and `undefined` show nothing (`${error ? html`…` : ""}`).
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let text = strings[0] as string;
  for (let i = 0; i < values.length; i++) text += render(values[i]) + strings[i + 1];
  return new SafeHtml(text);
}
