import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("the npm package @agentpass/verify", () => {
  it("packs into a tarball that installs and runs in a clean directory", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentpass-verify-pack-"));
    try {
      execFileSync("npm", ["run", "build"], { cwd: packageDir, stdio: "ignore" });
      execFileSync("npm", ["pack", "--pack-destination", dir], {
        cwd: packageDir,
        stdio: "ignore",
      });
      const tarball = readdirSync(dir).find((name) => name.endsWith(".tgz"));
      assert.ok(tarball, "npm pack wrote a tarball");
      const app = join(dir, "app");
      execFileSync("mkdir", ["-p", app]);
      writeFileSync(join(app, "package.json"), '{"name":"app","private":true,"type":"module"}');
      execFileSync("npm", ["install", "--no-audit", "--no-fund", join(dir, tarball)], {
        cwd: app,
        stdio: "ignore",
      });
      writeFileSync(
        join(app, "check.mjs"),
        `import { verify, DEFAULT_API_URL } from "@agentpass/verify";
import { agentPassAuth } from "@agentpass/verify/hono";
const result = await verify("apk_x", "aps_x", "http://127.0.0.1:9");
console.log(JSON.stringify({ result, DEFAULT_API_URL, hono: typeof agentPassAuth }));`,
      );
      // The repository's Node 24, and the machine's own Node (20 here) when there is one.
      const runtimes = [process.execPath, "/usr/bin/node"].filter((path) => existsSync(path));
      for (const runtime of runtimes) {
        const output = JSON.parse(
          execFileSync(runtime, ["check.mjs"], { cwd: app, encoding: "utf8" }),
        );
        assert.deepEqual(output, {
          result: {
            ok: false,
            error: "Network error: cannot reach API",
            status: 0,
            code: "network_error",
          },
          DEFAULT_API_URL: "https://agentpass.dev",
          hono: "function",
        });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
