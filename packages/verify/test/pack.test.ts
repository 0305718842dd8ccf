import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { prepareRelease, type Release } from "../../../scripts/pack.ts";

describe("the npm package @agentpass/verify", () => {
  let dir: string;
  let release: Release;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "agentpass-verify-pack-"));
    release = prepareRelease("verify", dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("would publish (npm publish --dry-run) with its metadata, its built JS and its types", () => {
    const { manifest, published } = release;
    assert.equal(manifest.name, "@agentpass/verify");
    assert.equal(manifest.license, "MIT");
    assert.deepEqual(manifest.repository, {
      type: "git",
      url: "git+https://github.com/agentpass/agentpass.git",
      directory: "packages/verify",
    });
    assert.deepEqual(manifest.engines, { node: ">=20" });
    assert.deepEqual(manifest.publishConfig, { access: "public" });
    assert.equal(manifest.types, "./dist/index.d.ts");
    assert.equal(manifest.main, "./dist/index.js");

    assert.equal(published.status, 0);
    assert.equal(published.id, "@agentpass/verify@0.1.0");
    assert.deepEqual(published.warnings, [], "npm corrects nothing in the package.json");
    // Every entry point, its JavaScript and its declarations, is in the package.
    const exported = Object.values(
      manifest.exports as Record<string, { types: string; default: string }>,
    ).flatMap((entry) => [entry.types, entry.default]);
    assert.deepEqual(Object.keys(manifest.exports as object), [
      ".",
      "./hono",
      "./express",
      "./dpop",
    ]);
    for (const path of exported) {
      assert.ok(published.files.includes(path.replace(/^\.\//, "")), `${path} is published`);
    }
    for (const file of published.files) {
      assert.match(file, /^(dist\/[\w-]+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/);
    }
  });

  it("installs and runs in a clean directory", () => {
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), '{"name":"app","private":true,"type":"module"}');
    execFileSync("npm", ["install", "--no-audit", "--no-fund", release.tarball], {
      cwd: app,
      stdio: "ignore",
    });
    writeFileSync(
      join(app, "check.mjs"),
      `import { verify } from "@agentpass/verify";
import { agentPassAuth } from "@agentpass/verify/hono";
import { createDpopKey, dpopHeaders } from "@agentpass/verify/dpop";
const h = await dpopHeaders(await createDpopKey(), "aps_x", "GET", "https://api.example/me");
const dpop = h.Authorization === "DPoP aps_x" && h.DPoP.split(".").length === 3;
const unreachable = await verify("apk_x", "aps_x", "http://127.0.0.1:1");
const unset = await verify("apk_x", "aps_x");
console.log(JSON.stringify({ unreachable, unset, hono: typeof agentPassAuth, dpop }));`,
    );
    // The repository's Node 24, and the machine's own Node (20 here) when there is one.
    const runtimes = [process.execPath, "/usr/bin/node"].filter((path) => existsSync(path));
    const env = { ...process.env };
    delete env.AGENTPASS_URL;
    for (const runtime of runtimes) {
      const output = JSON.parse(
        execFileSync(runtime, ["check.mjs"], { cwd: app, encoding: "utf8", env }),
      );
      assert.deepEqual(output, {
        unreachable: {
          ok: false,
          error: "Network error: cannot reach API",
          status: 0,
          code: "network_error",
        },
        unset: {
          ok: false,
          error: "No AgentPass URL: pass apiUrl or set AGENTPASS_URL",
          status: 0,
          code: "api_url_missing",
        },
        hono: "function",
        dpop: true,
      });
    }
  });
});
