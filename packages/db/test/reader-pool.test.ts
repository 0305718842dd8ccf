import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openDatabase, type ReaderPool } from "../src/index.ts";
import { createReaderPool, READ_TIMEOUT_CODE } from "../src/reader-pool.ts";
import { sqliteHandlesOf } from "../src/testing.ts";

/** A statement that counts to `n` one row at a time (~10 M rows a second). */
const countTo = (n: number, check = "") =>
  `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}${check})
   SELECT count(*) AS n FROM c`;

function isReadTimeout(error: Error) {
  assert.equal((error as Error & { code?: string }).code, READ_TIMEOUT_CODE);
  assert.match(error.message, /ran past its deadline/);
  return true;
}

describe("reader threads (SQLite)", () => {
  let dataDir: string;
  let database: ReturnType<typeof openDatabase>;
  let readers: ReaderPool;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), "agentpass-readers-"));
    database = openDatabase({ dataDir, fileName: "test.sqlite", readerThreads: 2 });
    sqliteHandlesOf(database).sqlite.exec(
      "CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)",
    );
    readers = sqliteHandlesOf(database).readers as ReaderPool;
  });
  after(async () => {
    await database.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Runs `test` with a pool of one thread on the test database, closed after. */
  async function withOneThread(test: (pool: ReturnType<typeof createReaderPool>) => Promise<void>) {
    const pool = createReaderPool({
      file: join(dataDir, "test.sqlite"),
      threads: 1,
      cacheMb: undefined,
      timeoutMs: 1000,
    });
    try {
      await test(pool);
    } finally {
      await pool.close();
    }
  }

  it("reads rows as objects of their columns by name, parameters bound in order", async () => {
    sqliteHandlesOf(database).sqlite.exec(
      "INSERT INTO items (id, name) VALUES (1, 'one'), (2, 'two'), (3, 'three')",
    );
    assert.deepEqual(
      await readers.all("SELECT id, name FROM items WHERE id >= ? AND name != ? ORDER BY id", [
        2,
        "three",
      ]),
      [{ id: 2, name: "two" }],
    );
  });

  it("sees every write committed on the service's own connection before the read", async () => {
    for (let id = 10; id < 60; id++) {
      sqliteHandlesOf(database)
        .sqlite.prepare("INSERT INTO items (id, name) VALUES (?, ?)")
        .run(id, `n${id}`);
      // Many reads at once, so both threads serve some of them.
      const counts = await Promise.all(
        Array.from({ length: 4 }, () =>
          readers.all("SELECT count(*) AS n FROM items WHERE id >= 10", []),
        ),
      );
      assert.deepEqual(counts, Array(4).fill([{ n: id - 9 }]));
    }
  });

  it("answers a failing read with SQLite's error, and the thread goes on serving", async () => {
    await assert.rejects(readers.all("SELECT missing FROM items", []), (error: Error) => {
      assert.match(error.message, /no such column: missing/);
      assert.equal((error as Error & { code?: string }).code, "ERR_SQLITE_ERROR");
      return true;
    });
    assert.deepEqual(await readers.all("SELECT name FROM items WHERE id = ?", [1]), [
      { name: "one" },
    ]);
  });

  it("never writes: its connection is read-only", async () => {
    await assert.rejects(
      readers.all("INSERT INTO items (id, name) VALUES (100, 'x') RETURNING id", []),
      /readonly/,
    );
    assert.equal(
      sqliteHandlesOf(database)
        .sqlite.prepare("SELECT count(*) AS n FROM items WHERE id = 100")
        .get()?.n,
      0,
    );
  });

  it("fails the reads of a database it cannot open, instead of leaving them waiting", async () => {
    const pool = createReaderPool({
      file: join(dataDir, "missing", "none.sqlite"),
      threads: 2,
      cacheMb: undefined,
      timeoutMs: 1000,
    });
    try {
      const reads = await Promise.allSettled(
        Array.from({ length: 5 }, () => pool.all("SELECT 1", [])),
      );
      for (const read of reads) {
        assert.equal(read.status, "rejected");
        assert.match(String(read.reason), /unable to open database file/);
      }
    } finally {
      await pool.close();
    }
  });

  it("refuses reads once closed, those still waiting included", async () => {
    const pool = createReaderPool({
      file: join(dataDir, "test.sqlite"),
      threads: 1,
      cacheMb: undefined,
      timeoutMs: 1000,
    });
    const reads = Promise.allSettled(
      Array.from({ length: 6 }, () => pool.all("SELECT count(*) FROM items", [])),
    );
    await pool.close();
    const settled = await reads;
    assert.deepEqual(
      settled.map((read) => read.status),
      Array(6).fill("rejected"),
    );
    await assert.rejects(pool.all("SELECT 1", []), /the database is closed/);
  });

  it("stops a read that checks within_deadline() on each row at its deadline, and serves the reads behind it", async () => {
    await withOneThread(async (pool) => {
      // Run to its end, it would answer 100 M: the timeout error is the proof it was stopped.
      const late = pool.all(countTo(100_000_000, " AND within_deadline()"), [], { timeoutMs: 150 });
      const behind = pool.all("SELECT count(*) AS n FROM items", []);
      await assert.rejects(late, isReadTimeout);
      assert.deepEqual(await behind, [{ n: 53 }]);
      // Without a deadline, the function never stops a read.
      assert.deepEqual(await pool.all(countTo(100_000, " AND within_deadline()"), []), [
        { n: 100_000 },
      ]);
    });
  });

  it("gives up at its deadline on a read it cannot interrupt, and re-runs the reads queued behind it on a fresh thread", async () => {
    await withOneThread(async (pool) => {
      // Proven by the order of events, never by milliseconds (a busy machine stretches those):
      // the same statement, started at the same time on a thread of its own, is the clock. The
      // stuck read is failed, and the reads queued behind it answered, before its twin ends —
      // so before the stuck statement could have ended either.
      const events: string[] = [];
      const record = (event: string) => () => {
        events.push(event);
      };
      const deadline = 100;
      const deadlinePassed = new Promise((resolve) => setTimeout(resolve, deadline)).then(
        record("deadline passed"),
      );
      // Nothing in it calls into JavaScript: it runs to its end (seconds) whatever happens.
      const stuck = pool.all(countTo(20_000_000), [], { timeoutMs: deadline });
      const twin = readers.all(countTo(20_000_000), []).then(record("twin ended"));
      // Both wait on the same, only thread.
      const behind = [
        pool.all("SELECT count(*) AS n FROM items", []),
        pool.all("SELECT name FROM items WHERE id = ?", [1]),
      ];
      stuck.catch(record("stuck read failed"));
      const answeredBehind = Promise.all(behind).then(record("reads behind answered"));
      await assert.rejects(stuck, isReadTimeout);
      assert.deepEqual(await Promise.all(behind), [[{ n: 53 }], [{ name: "one" }]]);
      await Promise.all([deadlinePassed, twin, answeredBehind]);
      assert.deepEqual(events, [
        "deadline passed",
        "stuck read failed",
        "reads behind answered",
        "twin ended",
      ]);
      assert.deepEqual(await pool.all("SELECT count(*) AS n FROM items", []), [{ n: 53 }]);
    });
  });

  it("counts a read's deadline from when its thread starts it, not while it waits", async () => {
    await withOneThread(async (pool) => {
      // The first runs ~1 s with no deadline (longer on a busy machine, never shorter); the
      // second waits for it on the same thread, far past its own 300 ms, then runs at once.
      const first = pool.all(countTo(10_000_000), []);
      const second = pool.all("SELECT count(*) AS n FROM items", [], { timeoutMs: 300 });
      assert.deepEqual(await first, [{ n: 10_000_000 }]);
      assert.deepEqual(await second, [{ n: 53 }]);
    });
  });

  it("does not keep the process alive once its reads are done", () => {
    // A script that reads through the threads and never closes the database: it must exit.
    const script = `
      import { openDatabase } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
      const database = openDatabase({ dataDir: ${JSON.stringify(dataDir)}, fileName: "test.sqlite", readerThreads: 2 });
      const rows = await Promise.all([1, 2, 3].map(() => database.handles.readers.all("SELECT count(*) AS n FROM items", [])));
      console.log(JSON.stringify(rows.map((r) => r[0].n > 0)));
    `;
    const file = join(dataDir, "script.mjs");
    writeFileSync(file, script);
    const output = execFileSync(process.execPath, [file], {
      encoding: "utf8",
      timeout: 20_000,
    });
    assert.equal(output.trim(), "[true,true,true]");
  });
});
