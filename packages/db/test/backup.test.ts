import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import { backupDatabase, type OpenedDatabase, openDatabase } from "../src/index.ts";
import { sqliteHandlesOf } from "../src/testing.ts";

interface Schema {
  items: { id: number; body: string };
}

describe("backupDatabase on SQLite", () => {
  let dataDir: string;
  let service: OpenedDatabase<Schema>;
  let writer: OpenedDatabase<Schema>;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "agentpass-backup-"));
    service = openDatabase<Schema>({ dataDir, fileName: "live.sqlite" });
    await sql`CREATE TABLE items (id integer PRIMARY KEY, body text NOT NULL)`.execute(service.db);
    // Another connection to the same file, as the running service is to the admin command.
    writer = openDatabase<Schema>({ dataDir, fileName: "live.sqlite" });
  });
  after(async () => {
    await writer.close();
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("copies the database as of one commit while another connection keeps writing", async () => {
    const insert = sqliteHandlesOf(writer).sqlite.prepare(
      "INSERT INTO items (id, body) VALUES (?, ?)",
    );
    // Rows of ~1 KB, so the copy has many pages and the writes go on while it is taken.
    for (let id = 1; id <= 2_000; id++) insert.run(id, "x".repeat(1_000));
    let written = 2_000;
    let writing = true;
    const writes = (async () => {
      while (writing) {
        written++;
        insert.run(written, "y".repeat(1_000));
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const copy = join(dataDir, "copy.sqlite");
    const done = await backupDatabase(service, copy);
    const writtenAfter = written;
    writing = false;
    await writes;

    assert.equal(done.file, copy);
    assert.ok(done.pages > 0);
    assert.equal(statSync(copy).mode & 0o777, 0o600, "readable by its owner only");
    const restored = new DatabaseSync(copy, { readOnly: true });
    try {
      assert.deepEqual(
        { ...restored.prepare("PRAGMA integrity_check").get() },
        {
          integrity_check: "ok",
        },
      );
      const { count, max } = restored
        .prepare("SELECT count(*) AS count, max(id) AS max FROM items")
        .get() as { count: number; max: number };
      // One commit's state: no gap, everything before the copy began, nothing after it ended.
      assert.equal(count, max, "rows 1..n without a gap");
      assert.ok(count >= 2_000 && count <= writtenAfter, `${count} rows`);
    } finally {
      restored.close();
    }
  });

  it("replaces an earlier copy and leaves no partial file behind", async () => {
    const copy = join(dataDir, "again.sqlite");
    await backupDatabase(service, copy);
    await backupDatabase(service, copy);
    assert.throws(() => statSync(`${copy}.partial`), /ENOENT/);
  });
});
