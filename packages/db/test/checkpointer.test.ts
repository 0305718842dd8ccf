import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, it } from "node:test";
import { sql } from "kysely";
import { openDatabase } from "../src/index.ts";

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

  it("takes the checkpoints off the service's connection and copies the whole WAL", async () => {
    const sqlite = database.sqlite as DatabaseSync;
    const checkpointer = database.checkpointer;
    assert.ok(checkpointer);
    assert.equal(autocheckpointOf(sqlite), 0);
    const fileBefore = statSync(join(dataDir, "test.sqlite")).size;
    // About 2 MB in 100 transactions: past the 1,000 pages SQLite would have checkpointed at.
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
    // The checkpoint under way may have started before the last commit: the one after it has not.
    await checkpointer.next();
    const { log, checkpointed } = await checkpointer.next();
    assert.ok(log > 0, "the WAL holds the writes");
    assert.equal(checkpointed, log, "every frame is copied into the database file");
    assert.ok(statSync(join(dataDir, "test.sqlite")).size > fileBefore + 2_000_000);
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
    await database.checkpointer?.next();
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

  it("gives the checkpoints back to SQLite once its thread has ended", async () => {
    const sqlite = database.sqlite as DatabaseSync;
    await database.checkpointer?.close();
    assert.equal(autocheckpointOf(sqlite), 1000);
    await assert.rejects(database.checkpointer?.next() ?? Promise.resolve(), /closed/);
  });

  it("is not started unless asked for", async () => {
    const other = openDatabase({ dataDir, fileName: "other.sqlite" });
    try {
      assert.equal(other.checkpointer, undefined);
      assert.equal(autocheckpointOf(other.sqlite as DatabaseSync), 1000);
    } finally {
      await other.close();
    }
  });
});
