import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

for (const engine of testEngines()) {
  describe(`agentpass-notes users (${engine})`, () => {
    let database: TestDatabase;
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [BIN, ...args],
          {
            env: {
              PATH: process.env.PATH,
              DATA_DIR: database.dataDir,
              DATABASE_URL: database.databaseUrl ?? "",
            },
          },
          (error, stdout, stderr) =>
            resolve({
              code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
              stdout,
              stderr,
            }),
        );
      });

    before(async () => {
      database = await createTestDatabase(engine);
    });
    after(() => database.drop());

    it("adds users by canonical email, lists them, refuses duplicates", async () => {
      const added = await cli("users", "add", "Grace.Hopper@Example.COM");
      assert.equal(added.code, 0, added.stderr);
      assert.match(added.stdout, /^[0-9a-f-]{36}\n$/);
      const again = await cli("users", "add", "grace.hopper@example.com");
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already exists/);
      const listed = await cli("users", "list", "--json");
      assert.deepEqual(
        JSON.parse(listed.stdout).map((u: { email: string }) => u.email),
        ["grace.hopper@example.com"],
      );
    });

    it("removes a user only with --yes (no terminal to confirm on)", async () => {
      await cli("users", "add", "temp@example.com");
      const refused = await cli("users", "remove", "temp@example.com");
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /Cancelled; nothing was deleted/);
      const removed = await cli("users", "remove", "temp@example.com", "--yes");
      assert.equal(removed.code, 0, removed.stderr);
      assert.equal((await cli("users", "remove", "temp@example.com", "--yes")).code, 1);
    });

    it("reports usage errors with exit code 2", async () => {
      assert.equal((await cli("users", "frob")).code, 2);
      assert.equal((await cli("users", "add")).code, 2);
      assert.equal((await cli("users", "add", "not-an-email")).code, 1);
    });
  });
}
