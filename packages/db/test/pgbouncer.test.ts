import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Kysely, sql } from "kysely";
import pg from "pg";
import { createPreparedQuery, type OpenedDatabase, openDatabase } from "../src/index.ts";
import {
  createTestDatabase,
  startPgBouncer,
  type TestDatabase,
  testEngines,
} from "../src/testing.ts";

interface Schema {
  items: { id: number; name: string };
  runs: { migration: string };
}

/**
 * Debian's PgBouncer in `pool_mode = transaction` with 2 server sessions, so that every client
 * connection shares them and a transaction lands on whichever is free.
 */
describe("PostgreSQL through PgBouncer in transaction mode", {
  skip: !testEngines().includes("postgres") && "PostgreSQL is not configured",
}, () => {
  let test: TestDatabase;
  let bouncer: Awaited<ReturnType<typeof startPgBouncer>>;
  const opened: OpenedDatabase<Schema>[] = [];
  const open = (poolMode: "session" | "transaction") => {
    const database = openDatabase<Schema>({
      databaseUrl: bouncer.databaseUrl,
      dataDir: test.dataDir,
      fileName: "unused.sqlite",
      poolMode,
    });
    opened.push(database);
    return database;
  };

  before(async () => {
    test = await createTestDatabase("postgres");
    bouncer = await startPgBouncer(test.databaseUrl as string, {
      poolMode: "transaction",
      serverConnections: 2,
    });
  });
  after(async () => {
    for (const database of opened) await database.close();
    await bouncer.close();
    await test.drop();
  });

  it("refuses the settings a session pool sends at connect, which DATABASE_POOL_MODE=transaction leaves out", async () => {
    await assert.rejects(
      open("session").db.selectNoFrom(sql<number>`1`.as("one")).execute(),
      /unsupported startup parameter: statement_timeout/,
    );
    const rows = await open("transaction").db.selectNoFrom(sql<number>`1`.as("one")).execute();
    assert.deepEqual(rows, [{ one: 1 }]);
  });

  it("applies migrations from three processes at once exactly once, and holds no lock after", async () => {
    const counted = (name: string) => ({
      async up(db: Kysely<unknown>) {
        await sql`CREATE TABLE IF NOT EXISTS runs (migration text NOT NULL)`.execute(db);
        await sql`INSERT INTO runs (migration) VALUES (${name})`.execute(db);
        if (name === "0001_items") {
          await sql`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)`.execute(db);
        }
      },
    });
    const first = { "0001_items": counted("0001_items") };
    const reports = await Promise.all(
      [1, 2, 3].map(() => open("transaction").migrate("bouncer_test", first)),
    );
    assert.deepEqual(
      reports.flatMap((report) => report.applied),
      ["0001_items"],
    );
    // A session lock taken through the pooler would stay on whichever server session took it,
    // and this next migration, on the other session, would wait for it.
    const second = await open("transaction").migrate("bouncer_test", {
      ...first,
      "0002_more": counted("0002_more"),
    });
    assert.deepEqual(second, { applied: ["0002_more"], pending: [], unknown: [] });
    const runs = await open("transaction").db.selectFrom("runs").selectAll().execute();
    assert.deepEqual(runs.map((run) => run.migration).sort(), ["0001_items", "0002_more"]);
  });

  it("answers prepared reads from any server session, where named statements fail", async () => {
    const database = open("transaction");
    await database.write((db) =>
      db
        .insertInto("items")
        .values(Array.from({ length: 20 }, (_, id) => ({ id, name: `item ${id}` })))
        .execute(),
    );
    const read = createPreparedQuery<{ name: string }>(
      database,
      "SELECT name FROM items WHERE id = ?",
    );
    const answers = await Promise.all(
      Array.from({ length: 10 }, async (_, worker) => {
        const names: string[] = [];
        for (let i = 0; i < 30; i++) names.push((await read((worker + i) % 20))?.name ?? "");
        return names;
      }),
    );
    for (const [worker, names] of answers.entries()) {
      assert.deepEqual(
        names,
        Array.from({ length: 30 }, (_, i) => `item ${(worker + i) % 20}`),
      );
    }

    // The same reads as named statements, as a session pool prepares them: a statement
    // prepared in one server session is sent to another, which does not know it (or knows
    // another client's of that name).
    const pool = new pg.Pool({ connectionString: bouncer.databaseUrl, max: 10 });
    try {
      const failures = await Promise.all(
        Array.from({ length: 10 }, async (_, worker) => {
          let failed = 0;
          for (let i = 0; i < 30; i++) {
            await pool
              .query({
                name: "by_id",
                text: "SELECT name FROM items WHERE id = $1",
                values: [worker],
              })
              .catch(() => failed++);
          }
          return failed;
        }),
      );
      assert.ok(
        failures.reduce((sum, failed) => sum + failed, 0) > 0,
        "named statements through a transaction pooler fail",
      );
    } finally {
      await pool.end();
    }
  });
});
