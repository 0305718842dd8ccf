import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import {
  createPreparedQuery,
  createPreparedRows,
  createPreparedWrite,
  type OpenedDatabase,
  openDatabase,
} from "../src/index.ts";
import { createTestDatabase, type TestDatabase, testEngines } from "../src/testing.ts";

interface Schema {
  items: { id: number; name: string };
}

for (const engine of testEngines()) {
  describe(`writes go through write and transaction (${engine})`, () => {
    let test: TestDatabase;
    let database: OpenedDatabase<Schema>;
    before(async () => {
      test = await createTestDatabase(engine);
      database = openDatabase<Schema>({ ...test, fileName: "write.sqlite" });
      await database.write((db) =>
        sql`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)`.execute(db),
      );
    });
    after(async () => {
      await database.close();
      await test.drop();
    });

    it("commits each statement of write, and a transaction's statements together or not at all", async () => {
      await database.write((db) => db.insertInto("items").values({ id: 1, name: "one" }).execute());
      await assert.rejects(
        database.transaction(async (trx) => {
          await trx.insertInto("items").values({ id: 2, name: "two" }).execute();
          throw new Error("changed my mind");
        }),
        /changed my mind/,
      );
      const names = await database.transaction(async (trx) => {
        await trx.insertInto("items").values({ id: 3, name: "three" }).execute();
        return trx.selectFrom("items").select("name").orderBy("id").execute();
      });
      assert.deepEqual(
        names.map((row) => row.name),
        ["one", "three"],
      );
    });

    it("prepares reads only: a statement that is not a SELECT is refused before it runs", async () => {
      const read = createPreparedQuery<{ name: string }>(
        database,
        "SELECT name FROM items WHERE id = ?",
      );
      assert.deepEqual(await read(1), { name: "one" });
      const rows = createPreparedRows<{ id: number }>(database, "SELECT id FROM items ORDER BY id");
      assert.deepEqual(
        (await rows()).map((row) => row.id),
        [1, 3],
      );
      for (const write of [
        "INSERT INTO items (id, name) VALUES (9, 'x') RETURNING id",
        "UPDATE items SET name = 'x' RETURNING id",
        "WITH gone AS (DELETE FROM items RETURNING id) SELECT id FROM gone",
      ]) {
        // @ts-expect-error: a prepared statement's SQL is a SELECT (`ReadSql`).
        assert.throws(() => createPreparedQuery(database, write), /only reads/);
        // @ts-expect-error: likewise for many rows.
        assert.throws(() => createPreparedRows(database, write), /only reads/);
      }
      assert.equal((await rows()).length, 2);
    });

    it("prepares a write of one statement, committed on its own, with the rows it returns", async () => {
      const rename = createPreparedWrite<{ id: number; name: string }>(
        database,
        "UPDATE items SET name = ? WHERE id = ? RETURNING id, name",
      );
      assert.deepEqual(await rename("renamed", 3), [{ id: 3, name: "renamed" }]);
      assert.deepEqual(await rename("nobody", 42), []);
      const read = createPreparedQuery<{ name: string }>(
        database,
        "SELECT name FROM items WHERE id = ?",
      );
      assert.deepEqual(await read(3), { name: "renamed" });
      const insert = createPreparedWrite(database, "INSERT INTO items (id, name) VALUES (?, ?)");
      await assert.rejects(insert(3, "taken"), /unique|duplicate/i);
      assert.deepEqual(await read(3), { name: "renamed" }, "a failed write changes nothing");
      for (const other of ["SELECT 1", "WITH x AS (SELECT 1) DELETE FROM items"]) {
        // @ts-expect-error: a prepared write's SQL is one INSERT, UPDATE or DELETE (`WriteSql`).
        assert.throws(() => createPreparedWrite(database, other), /one INSERT, UPDATE or DELETE/);
      }
    });
  });
}

describe("SQLite: hasChanged sees every write of this process, and every commit of another", () => {
  let test: TestDatabase;
  let database: OpenedDatabase<Schema>;
  let hasChanged: () => boolean;
  before(async () => {
    test = await createTestDatabase("sqlite");
    database = openDatabase<Schema>({ ...test, fileName: "changes.sqlite" });
    await database.write((db) =>
      sql`CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)`.execute(db),
    );
    hasChanged = database.hasChanged as () => boolean;
    hasChanged();
  });
  after(async () => {
    await database.close();
    await test.drop();
  });

  it("is unchanged across reads, and changed after each write, transaction or failed write", async () => {
    await database.db.selectFrom("items").selectAll().execute();
    await createPreparedQuery(database, "SELECT count(*) AS n FROM items")();
    assert.equal(hasChanged(), false);
    await database.write((db) => db.insertInto("items").values({ id: 1, name: "a" }).execute());
    assert.equal(hasChanged(), true);
    assert.equal(hasChanged(), false);
    await database.transaction((trx) =>
      trx.updateTable("items").set({ name: "b" }).where("id", "=", 1).execute(),
    );
    assert.equal(hasChanged(), true);
    await createPreparedWrite(database, "UPDATE items SET name = ? WHERE id = ?")("c", 1);
    assert.equal(hasChanged(), true, "a prepared write is a write");
    assert.equal(hasChanged(), false);
    await assert.rejects(
      database.write((db) => db.insertInto("items").values({ id: 1, name: "again" }).execute()),
      /UNIQUE/,
    );
    assert.equal(hasChanged(), true);
    assert.equal(hasChanged(), false);
  });

  it("is changed when checked while a write runs, and again once it has ended", async () => {
    const release = Promise.withResolvers<void>();
    const running = database.write(async (db) => {
      await release.promise;
      await db.insertInto("items").values({ id: 2, name: "late" }).execute();
    });
    assert.equal(hasChanged(), true, "a write has started");
    assert.equal(hasChanged(), false);
    release.resolve();
    await running;
    assert.equal(hasChanged(), true, "the write has ended: what was read meanwhile may be stale");
    assert.equal(hasChanged(), false);
  });

  it("is changed by a commit on another connection", async () => {
    const other = openDatabase<Schema>({ ...test, fileName: "changes.sqlite" });
    try {
      assert.equal(hasChanged(), false);
      await other.write((db) => db.insertInto("items").values({ id: 3, name: "other" }).execute());
      assert.equal(hasChanged(), true);
      assert.equal(hasChanged(), false);
    } finally {
      await other.close();
    }
  });

  it("counts migrations as writes", async () => {
    await database.migrate("write_test", {
      "0001": { up: (db) => sql`CREATE TABLE more (x integer)`.execute(db).then(() => {}) },
    });
    assert.equal(hasChanged(), true);
  });
});
