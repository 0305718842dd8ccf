import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { promisify } from "node:util";
import { createTestDatabase, type TestDatabase, testEngines } from "@agentpass/db/testing";
import { loadConfig } from "../src/config.ts";
import { type IdentityService, openIdentityService } from "../src/service.ts";
import { openTestIdentity } from "./support/harness.ts";
import { runAdminCli } from "./support/run-cli.ts";

const run = promisify(execFile);

/**
 * docs/operations.md, "Backups": the procedure of each engine, taken while the service answers
 * verifies, restored into an empty place with the same secret, and a token minted before the
 * backup verifies on the restored service.
 */
for (const engine of testEngines()) {
  describe(`backup and restore (${engine})`, () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    it("restores a backup taken under load to a service where a token minted before it verifies", async () => {
      const identity = await openTestIdentity(
        engine,
        { MINTS_PER_MINUTE: "1000000000" },
        { realClock: true },
      );
      cleanups.push(() => identity.close());
      const partner = await identity.partner();
      const { key } = await identity.userKey();
      const token = await identity.token(key);
      const verify = (through: { request: IdentityService["request"] }) =>
        through.request("/api/verify", {
          method: "POST",
          headers: { authorization: `Bearer ${partner.key}`, "content-type": "application/json" },
          body: JSON.stringify({ sessionToken: token }),
        });

      // Verifies and mints go on, and write (usage, key uses), while the backup is taken.
      let loading = true;
      let answered = 0;
      const load = (async () => {
        while (loading) {
          const [verified, minted] = await Promise.all([verify(identity.app), identity.mint(key)]);
          assert.equal(verified.status, 200);
          assert.equal(minted.status, 201);
          answered++;
        }
      })();

      const restoredDir = mkdtempSync(join(tmpdir(), "agentpass-restored-"));
      cleanups.push(async () => rmSync(restoredDir, { recursive: true, force: true }));
      let restoredUrl: string | undefined;
      if (engine === "sqlite") {
        const file = join(restoredDir, "backup.sqlite");
        const backup = await runAdminCli(["backup", file], identity.env);
        assert.equal(backup.code, 0, backup.stderr);
        assert.equal(backup.stdout.trim(), file);
        copyFileSync(file, join(restoredDir, "identity.sqlite"));
      } else {
        const dump = join(restoredDir, "identity.dump");
        await run("pg_dump", ["--format=custom", `--file=${dump}`, identity.env.DATABASE_URL]);
        const restored: TestDatabase = await createTestDatabase("postgres");
        cleanups.push(() => restored.drop());
        restoredUrl = restored.databaseUrl;
        await run("pg_restore", ["--no-owner", `--dbname=${restoredUrl}`, dump]);
      }
      loading = false;
      await load;
      assert.ok(answered > 0, "the service answered while the backup was taken");

      // The secret the sealing keys are wrapped under is not in the backup: it goes along.
      copyFileSync(
        join(identity.env.DATA_DIR, "identity.secret"),
        join(restoredDir, "identity.secret"),
      );
      const loaded = loadConfig({
        DATA_DIR: restoredDir,
        DATABASE_URL: restoredUrl,
        LOG_LEVEL: "silent",
      });
      assert.ok(loaded.ok);
      const restored = await openIdentityService(loaded.config);
      cleanups.push(() => restored.close());
      const answer = await verify(restored);
      assert.equal(answer.status, 200);
      assert.equal(
        ((await answer.json()) as { email: string }).email.endsWith("@example.com"),
        true,
      );
    });
  });
}
