import type {
  Engine,
  EngineHandles,
  ReadOnlyDb,
  Write,
  WriteTransaction,
} from "./open-database.ts";

/**
 * What a store is given of its database: reads through `db`, a query builder without its write
 * statements (`ReadOnlyDb`: no `insertInto`, `updateTable`, `deleteFrom`, `schema`,
 * `transaction`), and writes through `write` and `transaction` only, which count every write so
 * a cache of this process drops what it replaced. A store that writes any other way does not
 * compile. An `OpenedDatabase` is one; migrations, tools and tests that seed a database hold the
 * `OpenedDatabase` itself, whose `db` is the whole query builder.
 */
export interface StoreDatabase<T> {
  /** The query builder for reads. Raw `sql` runs on it too: keep that to reads. */
  db: ReadOnlyDb<T>;
  engine: Engine;
  write: Write<T>;
  transaction: WriteTransaction<T>;
  /** For this package's statements without the query builder (`createPreparedQuery`, …). */
  handles: EngineHandles;
  /** `OpenedDatabase.hasChanged`: SQLite only. */
  hasChanged?: (() => boolean) | undefined;
}
