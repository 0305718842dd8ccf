import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { prepareRelease, type Release } from "../../../scripts/pack.ts";

describe("the npm package @agentpass/cli", () => {
  let dir: string;
  let release: Release;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "agentpass-cli-pack-"));
    release = prepareRelease("cli", dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("would publish (npm publish --dry-run) under the project's scope, with the agentpass command", () => {
    const { manifest, published } = release;
    // Not `agentpass`: that npm name is a stranger's package.
    assert.equal(manifest.name, "@agentpass/cli");
    assert.deepEqual(manifest.bin, { agentpass: "bin/agentpass.js" });
    assert.equal(manifest.license, "MIT");
    assert.deepEqual(manifest.repository, {
      type: "git",
      url: "git+https://github.com/agentpass/agentpass.git",
      directory: "packages/cli",
    });
    assert.deepEqual(manifest.engines, { node: ">=20" });
    assert.deepEqual(manifest.publishConfig, { access: "public" });
    // A command, not a library: nothing to import, so no `main`, `exports` or `types`.
    assert.deepEqual(
      [manifest.main, manifest.exports, manifest.types],
      [undefined, undefined, undefined],
    );

    assert.equal(published.status, 0);
    assert.equal(published.id, "@agentpass/cli@0.1.0");
    assert.deepEqual(published.warnings, [], "npm corrects nothing in the package.json");
    for (const file of ["bin/agentpass.js", "dist/bin.js", "README.md", "LICENSE"]) {
      assert.ok(published.files.includes(file), `${file} is published`);
    }
    for (const file of published.files) {
      assert.match(
        file,
        /^(bin\/agentpass\.js|dist\/[\w-]+\.js|README\.md|LICENSE|package\.json)$/,
      );
    }
  });

  it("installs from the tarball, and its agentpass command runs from a clean directory", () => {
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), '{"name":"app","private":true}');
    execFileSync("npm", ["install", "--no-audit", "--no-fund", release.tarball], {
      cwd: app,
      stdio: "ignore",
    });
    const bin = join(app, "node_modules", "@agentpass", "cli", "dist", "bin.js");
    assert.ok(existsSync(join(app, "node_modules", ".bin", "agentpass")), "the bin is linked");
    // The repository's Node 24, and the machine's own Node (20 here) when there is one.
    for (const runtime of [process.execPath, "/usr/bin/node"].filter((p) => existsSync(p))) {
      const help = execFileSync(runtime, [bin, "--help"], { encoding: "utf8" });
      assert.match(help, /agentpass <command>/);
      assert.equal(execFileSync(runtime, [bin, "--version"], { encoding: "utf8" }), "0.1.0\n");
    }
  });
});
