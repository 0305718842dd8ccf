import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { NODE_FLAGS } from "../node-flags.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The flags of the first `node` command line of `text` that runs `script`: the words between. */
function flagsBefore(text: string, script: string): string[] {
  const line = text
    .split("\n")
    .find((candidate) => candidate.startsWith("node ") && candidate.includes(` ${script}`));
  assert.ok(line, `a command runs ${script}`);
  const words = line.split(" ");
  return words.slice(1, words.indexOf(script));
}

describe("each service's Node flags", () => {
  it("are the same in the production commands of docs/operations.md as in scripts/node-flags.ts", () => {
    const readme = readFileSync(join(root, "docs/operations.md"), "utf8");
    assert.deepEqual(flagsBefore(readme, "apps/identity/src/bin.ts"), NODE_FLAGS.identity);
    assert.deepEqual(flagsBefore(readme, "apps/notes/src/bin.ts"), NODE_FLAGS.notes);
  });

  it("of the identity service are those of npm start, both services in one process", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts;
    // `--conditions=agentpass-source` loads the workspace packages from source; it is no V8 flag.
    const flags = flagsBefore(scripts.start, "scripts/start.ts");
    assert.deepEqual(
      flags.filter((flag) => !flag.startsWith("--conditions=")),
      NODE_FLAGS.identity,
    );
  });
});
