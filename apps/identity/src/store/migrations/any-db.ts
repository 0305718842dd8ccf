import type { Kysely } from "kysely";

/** The database as a migration sees it: the schema it changes is not typed yet. */
// biome-ignore lint/suspicious/noExplicitAny: migrations describe the schema before it is typed.
export type AnyDb = Kysely<any>;
