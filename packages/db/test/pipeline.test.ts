import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import {
  createPreparedQuery,
  isDatabaseUnavailable,
  type OpenedDatabase,
  openDatabase,
} from "../src/index.ts";
import {
  createTestDatabase,
  startDatabaseProxy,
  type TestDatabase,
  testEngines,
} from "../src/testing.ts";

/**
 * Prepared reads on PostgreSQL share one pipelined connection (`OpenedDatabase.pipeline`): what
 * it must keep of a connection per request (each statement its own answer, its own failure, its
 * deadline) and what it must survive (a connection lost, a server that stops answering).
 */
describe("prepared reads pipelined on one PostgreSQL connection", {
  skip: !testEngines().includes("postgres") && "PostgreSQL is not configured",
}, () => {
  let test: TestDatabase;
  let proxy: Awaited<ReturnType<typeof startDatabaseProxy>>;
  const opened: OpenedDatabase<unknown>[] = [];
  const open = (options: { viaProxy?: boolean; deadlineMs?: number } = {}) => {
    const database = openDatabase<unknown>({
      databaseUrl: options.viaProxy ? proxy.databaseUrl : test.databaseUrl,
      dataDir: test.dataDir,
      fileName: "unused.sqlite",
      deadlineMs: options.deadlineMs,
    });
    opened.push(database);
    return database;
  };
  const backendOf = (database: OpenedDatabase<unknown>) =>
    createPreparedQuery<{ pid: number }>(database, "SELECT pg_backend_pid() AS pid");

  before(async () => {
    test = await createTestDatabase("postgres");
    proxy = await startDatabaseProxy(test.databaseUrl as string);
  });
  after(async () => {
    for (const database of opened) await database.close();
    await proxy.close();
    await test.drop();
  });

  it("runs the reads of 50 concurrent requests on one server session, each with its own answer", async () => {
    const database = open();
    const echo = createPreparedQuery<{ n: number; pid: number }>(
      database,
      "SELECT ?::int AS n, pg_backend_pid() AS pid",
    );
    const rows = await Promise.all(Array.from({ length: 50 }, (_, n) => echo(n)));
    assert.deepEqual(
      rows.map((row) => row?.n),
      Array.from({ length: 50 }, (_, n) => n),
    );
    assert.equal(new Set(rows.map((row) => row?.pid)).size, 1, "one server session");
  });

  it("fails a statement alone: the reads sent beside it are answered", async () => {
    const database = open();
    const divide = createPreparedQuery<{ q: number }>(database, "SELECT 12 / ?::int AS q");
    const answers = await Promise.allSettled([divide(3), divide(0), divide(4), divide(6)]);
    assert.deepEqual(answers[0], { status: "fulfilled", value: { q: 4 } });
    assert.equal(answers[1]?.status, "rejected");
    assert.match(String((answers[1] as PromiseRejectedResult).reason), /division by zero/);
    assert.equal(isDatabaseUnavailable((answers[1] as PromiseRejectedResult).reason), false);
    assert.deepEqual(answers[2], { status: "fulfilled", value: { q: 3 } });
    assert.deepEqual(answers[3], { status: "fulfilled", value: { q: 2 } });
    assert.deepEqual(await divide(2), { q: 6 }, "the connection goes on");
  });

  it("opens a new connection after the server ends its session, failing only as unavailable", async () => {
    const database = open();
    const backend = backendOf(database);
    const first = (await backend())?.pid;
    const admin = new pg.Client({ connectionString: test.databaseUrl });
    await admin.connect();
    try {
      await admin.query("SELECT pg_terminate_backend($1)", [first]);
    } finally {
      await admin.end();
    }
    let next: number | undefined;
    for (let attempt = 0; attempt < 50 && next === undefined; attempt++) {
      try {
        next = (await backend())?.pid;
      } catch (error) {
        assert.ok(isDatabaseUnavailable(error), `a 503, not a 500: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.ok(next !== undefined, "reads again on a new connection");
    assert.notEqual(next, first);
  });

  it("gives up on a stalled server at its deadline, as unavailable, and reads again once it answers", {
    timeout: 60_000,
  }, async () => {
    const database = open({ viaProxy: true, deadlineMs: 300 });
    const backend = backendOf(database);
    const first = (await backend())?.pid;
    assert.equal(typeof first, "number");
    proxy.stall();
    try {
      // Answered at all while the server stays stalled, they never waited on it (no bound in
      // ms, which a busy machine stretches).
      const stalled = await Promise.allSettled([backend(), backend(), backend()]);
      for (const answer of stalled) {
        assert.equal(answer.status, "rejected");
        assert.ok(isDatabaseUnavailable((answer as PromiseRejectedResult).reason));
      }
      // Reads go on failing as unavailable while it lasts: on the lost connection, then each
      // at the deadline of a new connection's connect, which meets the stall too: read until
      // both kinds were seen (the test's timeout is the backstop), however long each takes.
      const failures = new Set<string>();
      while (failures.size < 2) {
        await assert.rejects(backend(), (error: Error) => {
          failures.add(error.message);
          return isDatabaseUnavailable(error);
        });
      }
    } finally {
      proxy.resume();
    }
    let next: number | undefined;
    for (let attempt = 0; attempt < 50 && next === undefined; attempt++) {
      try {
        next = (await backend())?.pid;
      } catch (error) {
        assert.ok(isDatabaseUnavailable(error), String(error));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.equal(typeof next, "number", "reads again once the server answers");
  });

  it("ends its connection on close, and refuses reads after it", async () => {
    const database = openDatabase<unknown>({
      databaseUrl: test.databaseUrl,
      dataDir: test.dataDir,
      fileName: "unused.sqlite",
    });
    const backend = backendOf(database);
    const pid = (await backend())?.pid;
    await database.close();
    const admin = new pg.Client({ connectionString: test.databaseUrl });
    await admin.connect();
    try {
      let alive = 1;
      for (let attempt = 0; attempt < 50 && alive > 0; attempt++) {
        const { rows } = await admin.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1",
          [pid],
        );
        alive = rows[0].n;
        if (alive > 0) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal(alive, 0, "the server session is gone");
    } finally {
      await admin.end();
    }
    await assert.rejects(backend(), /closed/);
  });
});
