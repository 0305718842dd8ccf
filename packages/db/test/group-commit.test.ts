import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import { type OpenedDatabase, openDatabase } from "../src/index.ts";
import { createTestDatabase, type TestDatabase } from "../src/testing.ts";

interface Schema {
  parents: { id: number };
  children: { id: number; parent_id: number };
}

describe("SQLite transactions share commits (group commit)", () => {
  let test: TestDatabase;
  let database: OpenedDatabase<Schema>;
  before(async () => {
    test = await createTestDatabase("sqlite");
    database = openDatabase<Schema>({ ...test, fileName: "group.sqlite" });
    await database.write(async (db) => {
      await sql`CREATE TABLE parents (id integer PRIMARY KEY)`.execute(db);
      await sql`CREATE TABLE children (id integer PRIMARY KEY, parent_id integer NOT NULL REFERENCES parents(id) DEFERRABLE INITIALLY DEFERRED)`.execute(
        db,
      );
    });
  });
  after(async () => {
    await database.close();
    await test.drop();
  });

  const rows = async () =>
    (await database.db.selectFrom("parents").select("id").orderBy("id").execute()).map(
      (row) => row.id,
    );

  it("commits concurrent transactions together, each whole, and fails only the one that threw", async () => {
    const asked = Array.from({ length: 20 }, (_, i) =>
      database.transaction(async (trx) => {
        await trx
          .insertInto("parents")
          .values({ id: i + 1 })
          .execute();
        await trx
          .insertInto("children")
          .values({ id: i + 1, parent_id: i + 1 })
          .execute();
        if (i === 7) throw new Error("the eighth changed its mind");
        return i;
      }),
    );
    const settled = await Promise.allSettled(asked);
    assert.equal(settled.filter((outcome) => outcome.status === "fulfilled").length, 19);
    assert.match(String((settled[7] as PromiseRejectedResult).reason), /changed its mind/);
    assert.deepEqual(
      await rows(),
      Array.from({ length: 20 }, (_, i) => i + 1).filter((id) => id !== 8),
      "every transaction but the failed one, each with both of its rows",
    );
    const children = await database.db.selectFrom("children").select("id").execute();
    assert.equal(children.length, 19);
  });

  it("rejects every transaction of a batch whose commit fails, and keeps none of them", async () => {
    await database.write((db) => sql`DELETE FROM children`.execute(db));
    await database.write((db) => sql`DELETE FROM parents`.execute(db));
    // Asked in one turn, the three share a batch. A deferred foreign key is checked at COMMIT:
    // the second fails the batch's commit, so none of the three may be acknowledged.
    const asked = [
      database.transaction((trx) => trx.insertInto("parents").values({ id: 100 }).execute()),
      database.transaction((trx) =>
        trx.insertInto("children").values({ id: 100, parent_id: 999 }).execute(),
      ),
      database.transaction((trx) => trx.insertInto("parents").values({ id: 101 }).execute()),
    ];
    const settled = await Promise.allSettled(asked);
    assert.deepEqual(
      settled.map((outcome) => outcome.status),
      ["rejected", "rejected", "rejected"],
      "nothing is acknowledged that was not committed",
    );
    assert.deepEqual(await rows(), []);
    // The next batch commits normally.
    await database.transaction((trx) => trx.insertInto("parents").values({ id: 102 }).execute());
    assert.deepEqual(await rows(), [102]);
  });

  it("commits together the transactions asked by the callbacks of one turn of the event loop", async () => {
    await database.write((db) => sql`DELETE FROM children`.execute(db));
    await database.write((db) => sql`DELETE FROM parents`.execute(db));
    // Requests read from several sockets in one turn each ask from a callback of their own, and
    // each runs its microtasks to the end before the next: a batch started in a microtask would
    // hold only the first. As above, the second fails the batch's commit at COMMIT, so when the
    // three share it none of them is kept.
    const asked = await new Promise<Promise<string>[]>((resolve) => {
      const promises: Promise<string>[] = [];
      const ask = (work: () => Promise<unknown>) =>
        setImmediate(() => {
          promises.push(
            work().then(
              () => "fulfilled",
              () => "rejected",
            ),
          );
          if (promises.length === 3) resolve(promises);
        });
      ask(() =>
        database.transaction((trx) => trx.insertInto("parents").values({ id: 200 }).execute()),
      );
      ask(() =>
        database.transaction((trx) =>
          trx.insertInto("children").values({ id: 200, parent_id: 999 }).execute(),
        ),
      );
      ask(() =>
        database.transaction((trx) => trx.insertInto("parents").values({ id: 201 }).execute()),
      );
    });
    assert.deepEqual(
      await Promise.all(asked),
      ["rejected", "rejected", "rejected"],
      "one commit held all three",
    );
    assert.deepEqual(await rows(), []);
  });
});
