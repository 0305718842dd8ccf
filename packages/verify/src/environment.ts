/**
 * An environment variable where the runtime has `process.env` (Node, Bun, Deno's Node mode), or
 * undefined: edge runtimes have none. An empty value counts as unset.
 */
export function readEnvironment(name: string): string | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  return env?.[name] || undefined;
}
