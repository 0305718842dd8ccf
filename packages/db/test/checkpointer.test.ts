import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, it } from "node:test";
import { sql } from "kysely";
import { openDatabase } from "../src/index.ts";
import { sqliteHandlesOf } from "../src/testing.ts";

/** The connection's automatic checkpoint threshold, in frames (0: never). */
function autocheckpointOf(sqlite: DatabaseSync): number {
  return Number(
    (sqlite.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
      .wal_autocheckpoint,
  );
}

describe("the checkpoint thread (SQLite)", () => {
  let dataDir: string;
  let database: ReturnType<typeof openDatabase<{ items: { id: number; body: string } }>>;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "agentpass-checkpoints-"));
    database = openDatabase({ dataDir, fileName: "test.sqlite", checkpointThread: true });
    await database.write((db) =>
      sql`CREATE TABLE items (id integer PRIMARY KEY, body text NOT NULL)`.execute(db),
    );
  });
  afterEach(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("copies the WAL into the database file while SQLite's own checkpoint stays on", async () => {
    const sqlite = sqliteHandlesOf(database).sqlite;
    const checkpointer = sqliteHandlesOf(database).checkpointer;
    assert.ok(checkpointer);
    assert.equal(autocheckpointOf(sqlite), 1000);
    const fileBefore = statSync(join(dataDir, "test.sqlite")).size;
    // About 2 MB in 100 transactions.
    const body = "x".repeat(20_000);
    for (let batch = 0; batch < 100; batch++) {
      await database.transaction(async (trx) => {
        for (let row = 0; row < 5; row++) {
          await trx
            .insertInto("items")
            .values({ id: batch * 5 + row, body })
            .execute();
        }
      });
    }
    // The first checkpoint to start after the last commit; one that met SQLite's automatic one
    // running could not run (-1), and the next that ran counts.
    let { log, checkpointed } = await checkpointer.next();
    for (let tries = 0; log === -1 && tries < 50; tries++) {
      ({ log, checkpointed } = await checkpointer.next());
    }
    assert.ok(log > 0, `the WAL holds the writes (${log} frames)`);
    assert.equal(checkpointed, log, "every frame is copied into the database file");
    assert.ok(statSync(join(dataDir, "test.sqlite")).size > fileBefore + 2_000_000);
  });

  it("keeps the WAL bounded under writes that never pause", async () => {
    // 20 MB in 1,000 transactions, one after another: a WAL starts over only once all of it is
    // copied, which passive checkpoints alone never reach while the writes go on.
    const body = "x".repeat(4_000);
    let largest = 0;
    for (let batch = 0; batch < 1000; batch++) {
      await database.transaction(async (trx) => {
        for (let row = 0; row < 5; row++) {
          await trx
            .insertInto("items")
            .values({ id: batch * 5 + row, body })
            .execute();
        }
      });
      largest = Math.max(largest, statSync(join(dataDir, "test.sqlite-wal")).size);
    }
    assert.ok(largest < 10_000_000, `the WAL grew to ${largest} bytes`);
  });

  it("loses nothing written while it checkpoints", async () => {
    const writes = Array.from({ length: 2000 }, (_, id) =>
      database.transaction((trx) =>
        trx
          .insertInto("items")
          .values({ id, body: `item ${id}` })
          .execute(),
      ),
    );
    await Promise.all(writes);
    await sqliteHandlesOf(database).checkpointer?.next();
    await database.close();
    const reopened = new DatabaseSync(join(dataDir, "test.sqlite"));
    try {
      assert.equal(reopened.prepare("PRAGMA integrity_check").get()?.integrity_check, "ok");
      assert.equal(reopened.prepare("SELECT count(*) AS n FROM items").get()?.n, 2000);
    } finally {
      reopened.close();
    }
    database = openDatabase({ dataDir, fileName: "test.sqlite" });
  });

  it("ends its thread on close", async () => {
    await sqliteHandlesOf(database).checkpointer?.close();
    await assert.rejects(
      sqliteHandlesOf(database).checkpointer?.next() ?? Promise.resolve(),
      /closed/,
    );
  });

  it("is not started unless asked for", async () => {
    const other = openDatabase({ dataDir, fileName: "other.sqlite" });
    try {
      assert.equal(sqliteHandlesOf(other).checkpointer, undefined);
      assert.equal(autocheckpointOf(sqliteHandlesOf(other).sqlite), 1000);
    } finally {
      await other.close();
    }
  });
});
