import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { startProduct } from "../start.ts";

describe("npm start", () => {
  it("runs both services, the notes API provisioned as a listed partner whose key survives restarts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "agentpass-start-"));
    const env = { DATA_DIR: dataDir, PORT: "0", NOTES_PORT: "0", LOG_LEVEL: "silent" };
    try {
      let product = await startProduct(env);
      const keyFile = join(dataDir, "notes-partner-key");
      const key = readFileSync(keyFile, "utf8").trim();
      assert.match(key, /^apk_/);
      assert.equal(statSync(keyFile).mode & 0o777, 0o600);
      // The notes API reaches AgentPass with its key: a forged token is a 401, not a 503.
      const answer = await fetch(`${product.notes.url}/api/notes`, {
        headers: { "x-session-token": "aps_x" },
      });
      assert.equal(answer.status, 401);
      assert.deepEqual(await answer.json(), {
        error: "Invalid or expired session token",
        code: "session_token_invalid",
      });
      await product.close();

      product = await startProduct(env);
      assert.equal(readFileSync(keyFile, "utf8").trim(), key, "the key is reused after a restart");
      await product.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("npm run demo walks the whole flow and exits 0", async () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const output = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ["scripts/demo.ts"], { cwd: root }, (error, stdout, stderr) =>
        error ? reject(new Error(stderr)) : resolve(stdout),
      );
    });
    assert.match(output, /→ 201 \{"note"/);
    assert.match(output, /search=kube[\s\S]*"total":1/);
    assert.match(output, /→ 204/);
    assert.match(output, /Demo complete/);
    assert.doesNotMatch(output, /apu_[A-Za-z0-9]{20,}/, "the user key is never printed whole");
  });
});
