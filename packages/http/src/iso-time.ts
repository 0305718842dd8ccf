const DAY_MS = 86_400_000;
/** The instants `toISOString` writes with a four-digit year: 0000-01-01 to 9999-12-31. */
const FIRST = -62_167_219_200_000;
const LAST = 253_402_300_799_999;
const MAX_DAYS = 64;

const dayPrefixes = new Map<number, string>();

/**
 * `new Date(ms).toISOString()`, for the timestamps of a page of notes or of every verification,
 * at a fraction of its cost: the date part ("2026-11-23T") is formatted once per day and kept,
 * the time of day is written from integer arithmetic.
 * Instants outside four-digit years, or not whole milliseconds, go to `toISOString` itself.
 */
export function isoTime(ms: number): string {
  if (!Number.isInteger(ms) || ms < FIRST || ms > LAST) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    if (dayPrefixes.size >= MAX_DAYS) dayPrefixes.clear();
    dayPrefixes.set(day, prefix);
  }
  let rest = ms - day * DAY_MS;
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  return `${prefix}${two(hours)}:${two(minutes)}:${two(seconds)}.${three(millis)}Z`;
}

function two(value: number): string {
  return value < 10 ? `0${value}` : `${value}`;
}

function three(value: number): string {
  return value < 10 ? `00${value}` : value < 100 ? `0${value}` : `${value}`;
}
