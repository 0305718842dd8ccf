import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, it } from "node:test";
import { promisify } from "node:util";
import pino from "pino";
import { batchByTurn, type LogDestination } from "../src/log-destination.ts";

/** A sink that records each write it is handed, and each flush. */
function recordingSink() {
  const writes: string[] = [];
  const flushes: string[] = [];
  const sink: LogDestination = {
    write: (chunk: string) => void writes.push(chunk),
    flush: (callback) => {
      flushes.push("flush");
      callback?.();
    },
    flushSync: () => void flushes.push("flushSync"),
  };
  return { sink, writes, flushes };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("batchByTurn", () => {
  it("hands the lines of one turn of the event loop to the sink as one write, in order", async () => {
    const { sink, writes } = recordingSink();
    const logger = pino({ base: null, timestamp: false }, batchByTurn(sink));
    logger.info("first");
    logger.info("second");
    assert.deepEqual(writes, [], "nothing is written before the turn ends");
    await nextTurn();
    assert.deepEqual(writes, ['{"level":30,"msg":"first"}\n{"level":30,"msg":"second"}\n']);
    logger.info("third");
    await nextTurn();
    assert.deepEqual(writes.slice(1), ['{"level":30,"msg":"third"}\n']);
    await nextTurn();
    assert.equal(writes.length, 2, "a turn with no line writes nothing");
  });

  it("hands waiting lines over before a flush, and synchronously before a fatal line's flushSync", async () => {
    const { sink, writes, flushes } = recordingSink();
    const logger = pino({ base: null, timestamp: false }, batchByTurn(sink));
    logger.info("waiting");
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    assert.deepEqual(writes, ['{"level":30,"msg":"waiting"}\n']);
    logger.info("before the crash");
    logger.fatal("crash");
    assert.deepEqual(writes.slice(1), [
      '{"level":30,"msg":"before the crash"}\n{"level":60,"msg":"crash"}\n',
    ]);
    assert.deepEqual(flushes, ["flush", "flushSync"]);
  });
});

describe("createLogDestination", () => {
  it("writes the lines still waiting when the process exits", async () => {
    // A process that logs and exits in the same turn, as a service stopping on a signal does.
    const script = `
      import pino from "pino";
      import { createLogDestination } from ${JSON.stringify(new URL("../src/log-destination.ts", import.meta.url).href)};
      const logger = pino({ base: null, timestamp: false }, createLogDestination(1));
      for (let i = 0; i < 3; i++) logger.info({ i }, "line");
      process.exit(0);
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--input-type=module", "--eval", script],
      { cwd: new URL("..", import.meta.url) },
    );
    assert.deepEqual(
      stdout.trim().split("\n"),
      [0, 1, 2].map((i) => `{"level":30,"i":${i},"msg":"line"}`),
    );
  });
});
