/** A route as Hono lists it in `app.routes`. */
export interface RouteEntry {
  method: string;
  path: string;
}

/**
 * The methods an app answers at `path`, from its routes (`app.routes`): what a 405's `Allow`
 * lists when a known path is asked with another method. HEAD comes with GET, as Hono answers it.
 * Middleware entries (`ALL`) name no method.
 */
export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const methods = new Set<string>();
  for (const route of routes) {
    if (route.method === "ALL" || !patternOf(route.path).test(path)) continue;
    methods.add(route.method);
    if (route.method === "GET") methods.add("HEAD");
  }
  return [...methods].sort();
}

/** A route's path as a regular expression: `:name` is one segment, `*` anything. */
function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((part) =>
      part === "*"
        ? ".*"
        : part.startsWith(":")
          ? "[^/]+"
          : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"),
    )
    .join("/");
  return new RegExp(`^${source}/?$`);
}
