import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, it } from "node:test";
import { sql } from "kysely";
import { openDatabase } from "../src/index.ts";
import { sqliteHandlesOf } from "../src/testing.ts";

/** The connection's automatic checkpoint threshold, in pages (0: never). */
function autocheckpointOf(sqlite: DatabaseSync): number {
  return Number(
    (sqlite.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
      .wal_autocheckpoint,
  );
}

describe("the SQLite write-ahead log", () => {
  let dataDir: string;
  let database: ReturnType<typeof openDatabase<{ items: { id: number; body: string } }>>;

  beforeEach(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "agentpass-wal-"));
    database = openDatabase({ dataDir, fileName: "test.sqlite" });
    await database.write((db) =>
      sql`CREATE TABLE items (id integer PRIMARY KEY, body text NOT NULL)`.execute(db),
    );
  });
  afterEach(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("is checkpointed by SQLite itself, at its default of 1,000 pages", () => {
    const sqlite = sqliteHandlesOf(database).sqlite;
    assert.equal(sqlite.prepare("PRAGMA journal_mode").get()?.journal_mode, "wal");
    assert.equal(autocheckpointOf(sqlite), 1000);
  });

  it("stays bounded under writes that never pause", async () => {
    // 20 MB in 1,000 transactions, one after another: without a checkpoint the WAL would hold
    // all of it; the automatic one copies it into the database file and starts the WAL over.
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
    assert.ok(statSync(join(dataDir, "test.sqlite")).size > 10_000_000, "copied into the file");
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
});
