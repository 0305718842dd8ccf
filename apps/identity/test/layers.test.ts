import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";

const FOLDERS = ["../src/http/pages/", "../src/http/web/"].map(
  (folder) => new URL(folder, import.meta.url),
);
/** The parts of the context that hold or write data: only the domain may touch them. */
const STORAGE = /\bctx\.(store|web|usageStore|usage|keyUsage|oauth|agents|agentUse)\b/g;

describe("the pages", () => {
  it("reach storage only through the domain, never through a store of the context", () => {
    for (const folder of FOLDERS) {
      for (const file of readdirSync(folder).filter((name) => name.endsWith(".ts"))) {
        const source = readFileSync(new URL(file, folder), "utf8");
        const uses = [...source.matchAll(STORAGE)].map((match) => match[0]);
        assert.deepEqual(uses, [], `${folder.pathname}${file}`);
      }
    }
  });
});
