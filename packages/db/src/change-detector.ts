import type { DatabaseSync, StatementSync } from "node:sqlite";
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from "kysely";

/**
 * Counts the statements this process runs through Kysely that may write (anything but a plain
 * SELECT), before and after each runs, so a read racing a write never looks unchanged.
 */
export class LocalWriteCounter implements KyselyPlugin {
  count = 0;

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (args.node.kind !== "SelectQueryNode") this.count++;
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (args.result.numAffectedRows !== undefined) this.count++;
    return args.result;
  }
}

/**
 * For SQLite: tells whether the database may have changed since the last call — a commit by
 * any other connection or process (`PRAGMA data_version`) or a write by this one. It lets a
 * process cache reads and still see a revocation made by another process on the very next
 * request. Costs one ~1 µs statement per call.
 */
export function createSqliteChangeDetector(sqlite: DatabaseSync, local: LocalWriteCounter) {
  let statement: StatementSync | undefined;
  let seenVersion = -1;
  let seenLocal = -1;
  return (): boolean => {
    if (!statement) {
      statement = sqlite.prepare("PRAGMA data_version");
      // Its one column as an array, not an object: 0.97 against 1.19 µs a call.
      statement.setReturnArrays(true);
    }
    const [version] = statement.get() as unknown as [number];
    if (version === seenVersion && local.count === seenLocal) return false;
    seenVersion = version;
    seenLocal = local.count;
    return true;
  };
}
