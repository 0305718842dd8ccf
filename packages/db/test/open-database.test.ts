import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { sql } from "kysely";
import { openDatabase } from "../src/index.ts";

const INDEX = new URL("../src/index.ts", import.meta.url).href;

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

describe("the folder of an SQLite database", () => {
  it("is made when missing, with the folders above it", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentpass-db-dir-"));
    const dataDir = join(root, "a", "b");
    const database = openDatabase({ dataDir, fileName: "service.sqlite" });
    try {
      assert.ok(statSync(join(dataDir, "service.sqlite")).isFile());
    } finally {
      await database.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("that cannot be made is refused with its name, where a recursive mkdir loops forever", async (t) => {
    if (!existsSync("/proc/self")) return t.skip("no /proc on this system");
    // In a process of its own: the recursive mkdir this replaced never returned, and would hold
    // this test's thread with it; the child is killed if it does not exit.
    const child = await new Promise<{ code: number | null; stderr: string }>((done) => {
      const script = `import { openDatabase } from ${JSON.stringify(INDEX)};
        try { openDatabase({ dataDir: "/proc/nope", fileName: "x.sqlite" }); }
        catch (error) { console.error(error.message); process.exit(3); }`;
      execFile(
        process.execPath,
        ["--input-type=module", "-e", script],
        { timeout: 60_000 },
        (error, _stdout, stderr) => done({ code: error ? (error.code as number) : 0, stderr }),
      );
    });
    assert.deepEqual(child, {
      code: 3,
      stderr: "DATA_DIR /proc/nope: cannot create /proc/nope: no such file or directory (ENOENT)\n",
    });
  });
});
