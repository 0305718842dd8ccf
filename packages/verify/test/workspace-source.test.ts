import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

/**
 * Inside the workspace, `@agentpass/verify` and the CLI run from their source (the
 * `agentpass-source` export condition that the root scripts and tsconfig set), so an edit to
 * `src/` holds on the next `npm start` or `npm test`; everywhere else, the published `dist/`.
 */
const CONDITION = "agentpass-source";
const root = new URL("../../../", import.meta.url);

/** Where `specifier` resolves from apps/notes (a workspace consumer), under `conditions`. */
function resolveFromNotes(specifier: string, conditions: string[]): string {
  const script = `console.log(import.meta.resolve(${JSON.stringify(specifier)}))`;
  return execFileSync(
    process.execPath,
    [...conditions.map((name) => `--conditions=${name}`), "--input-type=module", "-e", script],
    { cwd: new URL("apps/notes/", root), encoding: "utf8" },
  ).trim();
}

describe("workspace packages", () => {
  it("resolve to their source under the workspace's condition", () => {
    assert.match(
      resolveFromNotes("@agentpass/verify", [CONDITION]),
      /packages\/verify\/src\/index\.ts$/,
    );
    assert.match(resolveFromNotes("@agentpass/verify/hono", [CONDITION]), /verify\/src\/hono\.ts$/);
    assert.match(
      resolveFromNotes("@agentpass/verify/express", [CONDITION]),
      /verify\/src\/express\.ts$/,
    );
  });

  it("resolve to the built dist without it, as an installed package does", () => {
    assert.match(resolveFromNotes("@agentpass/verify", []), /packages\/verify\/dist\/index\.js$/);
  });

  it("run the CLI from its source under the condition", () => {
    const cli = new URL("packages/cli/", root);
    const script = 'console.log(import.meta.resolve("#main"))';
    const resolved = execFileSync(
      process.execPath,
      [`--conditions=${CONDITION}`, "--input-type=module", "-e", script],
      { cwd: cli, encoding: "utf8" },
    ).trim();
    assert.match(resolved, /packages\/cli\/src\/bin\.ts$/);
  });

  it("are what every script that runs the workspace and the type checker resolve", () => {
    const { scripts } = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
    for (const name of ["start", "test:suites", "demo", "bench", "test:cluster"]) {
      assert.match(scripts[name], new RegExp(`(^|&& )node --conditions=${CONDITION} `), name);
    }
    const tsconfig = JSON.parse(readFileSync(new URL("tsconfig.json", root), "utf8"));
    assert.deepEqual(tsconfig.compilerOptions.customConditions, [CONDITION]);
  });
});
