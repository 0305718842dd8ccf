import { readFileSync } from "node:fs";
import { getSystemErrorMessage } from "node:util";
import { z } from "zod";

/** A service's configuration as read from its environment, or why it cannot start. */
type ReadEnvironment<Values> =
  | {
      ok: true;
      values: Values;
      /** One line per unknown variable that looks like a misspelt setting, for the operator. */
      warnings: string[];
    }
  | { ok: false; error: string };

/**
 * Reads a service's settings from `env` against `schema`, whose keys are the variables it reads.
 * Empty variables count as unset, as in most shells' `VAR= command`. Each of `secrets` may be
 * given as `<NAME>_FILE` instead, the path of a file holding the value (a trailing newline is
 * dropped), so a secret need not sit in the environment. An invalid value is reported as
 * `Invalid NAME: reason`, never with the value: it may be a password. An unknown variable that
 * looks like a misspelt setting is a warning, or in production (an https `PUBLIC_URL`, for every
 * service) a reason not to start.
 *
 * @example
 * const read = readEnvironment(ConfigSchema, process.env, ["AGENTPASS_SECRET"]);
 * if (!read.ok) throw new Error(read.error); // "Invalid AGENTPASS_SECRET: must be at least …"
 * for (const line of read.warnings) console.warn(line); // "DATABSE_URL: did you mean DATABASE_URL?"
 */
export function readEnvironment<Schema extends z.ZodObject>(
  schema: Schema,
  env: Record<string, string | undefined>,
  secrets: readonly string[],
): ReadEnvironment<z.output<Schema>> {
  const present: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value) present[name] = value;
  const read = readSecretFiles(present, secrets);
  if (!read.ok) return read;
  const parsed = schema.safeParse(read.env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? "configuration");
    const source = read.fromFiles.has(name) ? ` (read from ${name}_FILE)` : "";
    return { ok: false, error: `Invalid ${name}${source}: ${issue?.message ?? "invalid value"}` };
  }
  const known = [...Object.keys(schema.shape), ...secrets.map((name) => `${name}_FILE`)];
  const misspelt = findMisspelt(Object.keys(present), known);
  if (misspelt.length > 0 && present.PUBLIC_URL?.startsWith("https://")) {
    // A misspelt setting is one not applied: DATABSE_URL would start an instance on an empty
    // SQLite file with a secret of its own, and it would refuse every key of its pool.
    return {
      ok: false,
      error: `${misspelt.join("; ")} (PUBLIC_URL is https: this stops the start)`,
    };
  }
  return { ok: true, values: parsed.data, warnings: misspelt };
}

function readSecretFiles(
  present: Record<string, string>,
  secrets: readonly string[],
):
  | { ok: true; env: Record<string, string>; fromFiles: Set<string> }
  | { ok: false; error: string } {
  const env = { ...present };
  const fromFiles = new Set<string>();
  for (const name of secrets) {
    const variable = `${name}_FILE`;
    const path = present[variable];
    if (path === undefined) continue;
    if (present[name] !== undefined) {
      return { ok: false, error: `Invalid ${variable}: ${name} is set too; set one of them` };
    }
    try {
      env[name] = readFileSync(path, "utf8").replace(/[\r\n]+$/, "");
    } catch (error) {
      // The path and the reason only: whatever was read stays unsaid.
      return { ok: false, error: `Invalid ${variable}: cannot read ${path}: ${reasonOf(error)}` };
    }
    fromFiles.add(name);
  }
  return { ok: true, env, fromFiles };
}

/**
 * The variables among `names` that look like a misspelt one of `known`, as
 * `DATABSE_URL: did you mean DATABASE_URL?`. Only names that look like ours are judged: a known
 * name in other letter case, or a name in capitals within two edits (a letter added, dropped,
 * changed, or two swapped) of a known one; one same-length edit for a known name of five letters
 * or fewer, so that `PGPORT` or `PORT0`, someone else's, is not taken for `PORT`. The rest of the
 * environment (PATH, HOME, the other service's variables) is never named.
 */
export function findMisspelt(names: Iterable<string>, known: readonly string[]): string[] {
  const ours = new Set(known);
  const lines: string[] = [];
  for (const name of names) {
    if (ours.has(name)) continue;
    const match = ours.has(name.toUpperCase()) ? name.toUpperCase() : closestOf(name, known);
    if (match) lines.push(`${name}: did you mean ${match}?`);
    else if (name.endsWith("_FILE") && ours.has(name.slice(0, -5))) {
      lines.push(`${name}: ${name.slice(0, -5)} cannot be read from a file; set it directly`);
    }
  }
  return lines;
}

function closestOf(name: string, known: readonly string[]): string | undefined {
  if (!/^[A-Z][A-Z0-9_]*$/.test(name)) return undefined;
  let closest: string | undefined;
  let fewest = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const allowed = candidate.length > 5 ? 2 : name.length === candidate.length ? 1 : 0;
    const edits = editsBetween(name, candidate);
    if (edits <= allowed && edits < fewest) [closest, fewest] = [candidate, edits];
  }
  return closest;
}

/**
 * Damerau–Levenshtein distance (optimal string alignment), or 3 when the lengths alone say it
 * is more than 2: no caller needs to tell 3 edits from 30.
 */
function editsBetween(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = (length: number) => Array.from({ length: length + 1 }, () => 0);
  let before = row(b.length);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = row(b.length);
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const changed = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + changed,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (before[j - 2] as number) + 1);
      }
      current[j] = best;
    }
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}

/**
 * A zod field for a URL setting of one of `schemes` (`smtp`, `smtps`), refused with `reason`
 * unless it starts `<scheme>://` and parses as a URL: a malformed one fails at start, naming its
 * variable, not later in the client that reads it. PostgreSQL's `user:pass@/db?host=/socket`
 * (no host name) is taken too, as the pg client takes it.
 *
 * @example
 * const schema = z.object({ SMTP_URL: urlSetting(["smtp", "smtps"], "must be an smtp:// URL").optional() });
 */
export function urlSetting(schemes: readonly string[], reason: string) {
  return z.string().refine((value) => {
    if (!schemes.some((scheme) => value.startsWith(`${scheme}://`))) return false;
    return URL.canParse(value.replace("@/", "@localhost/"));
  }, reason);
}

/**
 * Whether a public URL names this machine only: plain http on a loopback host (`localhost`,
 * `*.localhost`, 127.0.0.0/8, `[::1]`).
 */
export function isLoopbackUrl(publicUrl: string): boolean {
  const url = URL.parse(publicUrl);
  if (url?.protocol !== "http:") return false;
  return (
    url.hostname === "localhost" ||
    url.hostname.endsWith(".localhost") ||
    url.hostname === "[::1]" ||
    /^127\.\d+\.\d+\.\d+$/.test(url.hostname)
  );
}

/**
 * Whether a listener on `host` (one address, several, or unset: every interface) answers this
 * machine only: each is a loopback address (127.0.0.0/8, `::1`, `::ffff:127.x.x.x`) or
 * `localhost`. `0.0.0.0`, `::` and any other address answer the network.
 */
function listensOnLoopbackOnly(host: string | readonly string[] | undefined): boolean {
  const hosts = typeof host === "string" ? [host] : (host ?? []);
  return hosts.length > 0 && hosts.every(isLoopbackAddress);
}

function isLoopbackAddress(host: string): boolean {
  const address = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return (
    address === "localhost" ||
    address === "::1" ||
    /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(address) ||
    /^0*:0*:0*:0*:0*:0*:0*:0*1$/.test(address)
  );
}

/**
 * Development on loopback: the service listens on loopback addresses only and its public URL
 * is plain http on a loopback host, so nothing but its own machine reaches it. Only there may a
 * service do what would be unsafe on a server others reach, such as writing sign-in codes to its
 * log or fetching documents from private addresses. A loopback PUBLIC_URL is not enough: a
 * container listens on 0.0.0.0 and its published port answers the network, whatever URL it is
 * told.
 *
 * @example
 * isLocalDevelopment("http://localhost:4000", ["127.0.0.1", "::1"]); // true
 * isLocalDevelopment("http://localhost:4000", "0.0.0.0"); // false: production rules
 */
export function isLocalDevelopment(
  publicUrl: string,
  host: string | readonly string[] | undefined,
): boolean {
  return isLoopbackUrl(publicUrl) && listensOnLoopbackOnly(host);
}

/** "permission denied (EACCES)": the system's words, without the path Node's message repeats. */
function reasonOf(error: unknown): string {
  const { errno, code } = error as NodeJS.ErrnoException;
  if (typeof errno !== "number" || !code) return String(error);
  return `${getSystemErrorMessage(errno)} (${code})`;
}
