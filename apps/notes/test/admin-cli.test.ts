import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { openDatabase } from "@agentpass/db";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import type { NotesDatabase } from "../src/store/schema.ts";
import { createNotesStore } from "../src/store/store.ts";

const BIN = fileURLToPath(new URL("../src/bin.ts", import.meta.url));

for (const engine of testEngines()) {
  describe(`agentpass-notes users (${engine})`, () => {
    let database: TestDatabase;
    const cli = (...args: string[]) => runCli(database, args);

    before(async () => {
      database = await createTestDatabase(engine);
      const migrated = await cli("migrate");
      assert.equal(migrated.code, 0, migrated.stderr);
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

    it("removing a user deletes their notes and tags, and nobody else's", async () => {
      await cli("users", "add", "leaving@example.com");
      await cli("users", "add", "staying@example.com");
      const opened = openDatabase<NotesDatabase>({
        databaseUrl: database.databaseUrl,
        dataDir: database.dataDir,
        fileName: "notes.sqlite",
      });
      const store = createNotesStore(opened);
      try {
        for (const email of ["leaving@example.com", "staying@example.com"]) {
          const user = await store.findUserByEmail(email);
          assert.ok(user);
          const tag = await store.createTag(user.id, "t", 1);
          assert.ok(tag);
          await store.createNote(
            user.id,
            { title: "n", content: [], contentText: "" },
            [tag.id],
            1,
          );
        }
        assert.equal((await cli("users", "remove", "leaving@example.com", "--yes")).code, 0);
        const count = async (table: "notes" | "tags" | "note_tags") =>
          Number(
            (
              await opened.db
                .selectFrom(table)
                .select((eb) => eb.fn.countAll().as("n"))
                .executeTakeFirstOrThrow()
            ).n,
          );
        assert.equal(await count("notes"), 1);
        assert.equal(await count("tags"), 1);
        assert.equal(await count("note_tags"), 1);
      } finally {
        await opened.close();
      }
    });

    it("reports usage errors with exit code 2", async () => {
      assert.equal((await cli("users", "frob")).code, 2);
      assert.equal((await cli("users", "add")).code, 2);
      assert.equal((await cli("users", "add", "not-an-email")).code, 1);
      const bogus = await cli("users", "list", "--bogus");
      assert.equal(bogus.code, 2);
      assert.match(bogus.stderr, /^agentpass-notes: Unknown option: --bogus\n\nagentpass-notes — /);
    });

    it("prints its version, and the verbs of users when given none", async () => {
      assert.equal((await cli("--version")).stdout.trim(), "0.1.0");
      const verbs = await cli("users");
      assert.equal(verbs.code, 0);
      assert.match(verbs.stdout, /users add <email>\n.*users list/);
    });
  });

  describe(`agentpass-notes migrate (${engine})`, () => {
    let database: TestDatabase;
    const cli = (...args: string[]) => runCli(database, args);
    before(async () => {
      database = await createTestDatabase(engine);
    });
    after(() => database.drop());

    it("users refuses a database that lacks migrations, changing nothing; migrate migrates it", async () => {
      const refused = await cli("users", "add", "early@example.com");
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        /^agentpass-notes: The database schema is behind this release \(missing migrations 0001_notes, .*\): run `agentpass-notes migrate` first\n$/,
      );
      const opened = openDatabase({ ...database, fileName: "notes.sqlite" });
      try {
        assert.deepEqual(await opened.db.introspection.getTables(), []);
      } finally {
        await opened.close();
      }
      const migrated = await cli("migrate");
      assert.equal(migrated.code, 0, migrated.stderr);
      assert.match(migrated.stdout, /^Applied 0001_notes, 0002_note_count, .*\n$/);
      assert.equal((await cli("users", "add", "early@example.com")).code, 0);
      assert.equal((await cli("migrate")).stdout, "The database schema is up to date\n");
    });
  });
}

/** Runs the notes admin CLI, another process, against `database`. */
function runCli(database: TestDatabase, args: string[]) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
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
}

describe("agentpass-notes start checks", () => {
  const folder = mkdtempSync(join(tmpdir(), "agentpass-notes-start-"));
  after(() => rmSync(folder, { recursive: true, force: true }));

  it("names a misspelt variable on stderr and runs, in development", async () => {
    const result = await runBounded(["migrate"], {
      DATA_DIR: join(folder, "misspelt"),
      AGENTPASS_PARTNR_KEY: "apk_x",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stderr,
      "agentpass-notes: warning: AGENTPASS_PARTNR_KEY: did you mean AGENTPASS_PARTNER_KEY?\n",
    );
  });

  it("stops serve in production (an https PUBLIC_URL) for a misspelt variable", async () => {
    const result = await runBounded(["serve"], {
      PORT: "0",
      DATA_DIR: join(folder, "production"),
      PUBLIC_URL: "https://notes.example",
      AGENTPASS_PARTNR_KEY: "apk_x",
    });
    assert.deepEqual(result, {
      code: 1,
      stdout: "",
      stderr:
        "agentpass-notes: AGENTPASS_PARTNR_KEY: did you mean AGENTPASS_PARTNER_KEY? (PUBLIC_URL is https: this stops the start)\n",
    });
  });

  it("exits 1 with `DATA_DIR <path>: <reason>` for a DATA_DIR it cannot make, never spinning", async () => {
    const dangling = join(folder, "dangling");
    symlinkSync(join(folder, "gone"), dangling);
    const cases: [string, string][] = [
      [join(dangling, "data"), `cannot create ${dangling}: file already exists (EEXIST)`],
    ];
    // Where Node's recursive mkdir spun: ENOENT in a directory that exists.
    if (existsSync("/proc/self")) {
      cases.push(["/proc/nope", "cannot create /proc/nope: no such file or directory (ENOENT)"]);
    }
    for (const [path, reason] of cases) {
      const result = await runBounded(["serve"], { PORT: "0", DATA_DIR: path });
      assert.deepEqual(result, {
        code: 1,
        stdout: "",
        stderr: `agentpass-notes: DATA_DIR ${path}: ${reason}\n`,
      });
    }
  });
});

/**
 * The notes admin CLI in another process, killed if it has not ended after a minute: a start
 * that does not stop (a server that came up, a loop) fails the test instead of outliving it.
 */
function runBounded(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        env: { PATH: process.env.PATH, LOG_LEVEL: "silent", ...env },
        timeout: 60_000,
        killSignal: "SIGKILL",
      },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : -1) : 0,
          stdout,
          stderr,
        }),
    );
  });
}
