import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, it } from "node:test";
import { promisify } from "node:util";

describe("createLogDestination", () => {
  it("has written every line when the process exits", async () => {
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
