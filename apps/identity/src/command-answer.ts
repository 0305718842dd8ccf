/** What a command prints on stdout, or why it refused (stderr, exit 1). */
export type CommandAnswer = { ok: true; output: string } | { ok: false; error: string };

/** Rows a listing prints unless `--limit` says otherwise (`audit`, `accounts`, `partners`). */
const DEFAULT_LIMIT = 100;
/** The most rows `accounts list` and `partners list` print. */
const LIST_MAX_LIMIT = 100_000;

/** `--limit`: a whole number from 1 to `max` (`DEFAULT_LIMIT` unset), or the message saying so. */
export function parseLimit(text: string | undefined, max = LIST_MAX_LIMIT): number | string {
  if (text === undefined) return DEFAULT_LIMIT;
  const limit = Number(text);
  return Number.isInteger(limit) && limit >= 1 && limit <= max
    ? limit
    : `--limit must be a whole number from 1 to ${max}`;
}

/** A `list` command: the newest `--limit` rows `read` gives, one line each, or a JSON array. */
export async function listCommand<Row>(
  options: { json: boolean; limit: string | undefined },
  read: (limit: number) => Promise<Row[]>,
  present: (row: Row) => unknown,
  line: (row: Row) => string,
): Promise<CommandAnswer> {
  const limit = parseLimit(options.limit);
  if (typeof limit === "string") return { ok: false, error: limit };
  const rows = await read(limit);
  if (options.json) return { ok: true, output: JSON.stringify(rows.map(present)) };
  return { ok: true, output: rows.map(line).join("\n") };
}
