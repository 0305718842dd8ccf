import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sql } from "kysely";
import { openDatabase } from "../src/index.ts";

describe("an SQLite database file", () => {
  it("is readable by the service's own user only, its write-ahead log too", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "agentpass-db-mode-"));
    const database = openDatabase({ dataDir, fileName: "service.sqlite" });
    try {
      await database.write(async (db) => {
        await sql`CREATE TABLE t (x integer)`.execute(db);
        await sql`INSERT INTO t VALUES (1)`.execute(db);
      });
      for (const file of ["service.sqlite", "service.sqlite-wal", "service.sqlite-shm"]) {
        assert.equal(statSync(join(dataDir, file)).mode & 0o777, 0o600, file);
      }
    } finally {
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
