import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

describe("the npm package agentpass", () => {
  it("packs into a tarball whose agentpass command runs from a clean directory", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentpass-cli-pack-"));
    try {
      execFileSync("npm", ["run", "build"], { cwd: packageDir, stdio: "ignore" });
      execFileSync("npm", ["pack", "--pack-destination", dir], {
        cwd: packageDir,
        stdio: "ignore",
      });
      const tarball = readdirSync(dir).find((name) => name.endsWith(".tgz"));
      assert.ok(tarball, "npm pack wrote a tarball");
      const app = join(dir, "app");
      mkdirSync(app);
      writeFileSync(join(app, "package.json"), '{"name":"app","private":true}');
      execFileSync("npm", ["install", "--no-audit", "--no-fund", join(dir, tarball)], {
        cwd: app,
        stdio: "ignore",
      });
      const bin = join(app, "node_modules", "agentpass", "dist", "bin.js");
      assert.ok(existsSync(join(app, "node_modules", ".bin", "agentpass")), "the bin is linked");
      // The repository's Node 24, and the machine's own Node (20 here) when there is one.
      for (const runtime of [process.execPath, "/usr/bin/node"].filter((p) => existsSync(p))) {
        const help = execFileSync(runtime, [bin, "--help"], { encoding: "utf8" });
        assert.match(help, /agentpass <command>/);
        assert.equal(execFileSync(runtime, [bin, "--version"], { encoding: "utf8" }), "0.1.0\n");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
