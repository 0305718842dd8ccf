import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/**
 * The DATA_DIR each service's configuration settles on without one set, read in another process
 * whose working folder is `cwd` and whose environment has no DATA_DIR, as a person's shell would
 * run `npx agentpass-server` from there.
 */
function defaultDataDirs(cwd: string): { identity: string; notes: string } {
  const config = (app: string) => pathToFileURL(join(root, "apps", app, "src", "config.ts")).href;
  const script = `
    import { loadConfig } from ${JSON.stringify(config("identity"))};
    import { loadNotesConfig } from ${JSON.stringify(config("notes"))};
    const identity = loadConfig({});
    const notes = loadNotesConfig({});
    if (!identity.ok || !notes.ok) throw new Error("configuration refused");
    console.log(JSON.stringify({ identity: identity.config.dataDir, notes: notes.config.dataDir }));
  `;
  const { DATA_DIR: _unset, ...env } = process.env;
  const output = execFileSync(process.execPath, ["--input-type=module", "--eval", script], {
    cwd,
    env,
    encoding: "utf8",
  });
  return JSON.parse(output);
}

describe("where the admin command lines look for their database without DATA_DIR", () => {
  // npm start (scripts/start.ts) runs at the repository's root: its data is <root>/data.
  const started = join(root, "data");

  it("is npm start's data folder from the repository's root", () => {
    assert.deepEqual(defaultDataDirs(root), { identity: started, notes: started });
  });

  it("is the same folder from a subfolder of the repository", () => {
    const sub = join(root, "apps", "notes");
    assert.deepEqual(defaultDataDirs(sub), { identity: started, notes: started });
  });

  it("is the same folder from outside the repository", () => {
    const elsewhere = mkdtempSync(join(tmpdir(), "agentpass-cwd-"));
    try {
      assert.deepEqual(defaultDataDirs(elsewhere), { identity: started, notes: started });
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
