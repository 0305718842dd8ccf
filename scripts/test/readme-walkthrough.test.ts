import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { startProduct } from "../start.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The README's "Try it with curl" block, exactly as a reader copies it. */
function curlWalkthrough(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("### Try it with curl"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, "the README has the walk-through");
  return block;
}

describe("the README's curl walk-through", () => {
  it("works as written against npm start, and again when everything exists already", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "agentpass-readme-"));
    const env = { DATA_DIR: dataDir, PORT: "0", NOTES_PORT: "0", LOG_LEVEL: "silent" };
    const product = await startProduct(env);
    try {
      // Only the address differs: the test's service listens on a free port, not 4000. Every
      // command must succeed (set -e), as in a script.
      const script = curlWalkthrough().replaceAll("http://localhost:4000", product.identity.url);
      for (const round of [1, 2]) {
        const output = await new Promise<string>((resolve, reject) => {
          execFile(
            "bash",
            ["-c", `set -eo pipefail\nshopt -s expand_aliases\n${script}`],
            { cwd: root, env: { ...process.env, DATA_DIR: dataDir } },
            (error, stdout, stderr) =>
              error ? reject(new Error(`round ${round}: ${stderr}`)) : resolve(stdout),
          );
        });
        assert.match(output, /\{"email":"ada@example\.com"\}/, `round ${round}`);
        assert.match(
          output,
          /\{"error":"Partner key has been revoked","code":"partner_key_revoked"\}/,
          `round ${round}`,
        );
      }
    } finally {
      await product.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
