// Declarations are emitted with the sources' own `.ts` import paths; a partner's TypeScript
// resolves them only as `.js`. Rewrites every relative `.ts` specifier in `dir`'s .d.ts files.
//   node scripts/rewrite-declaration-imports.mjs packages/verify/dist
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
if (!dir) throw new Error("usage: rewrite-declaration-imports.mjs <dist folder>");
for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
  if (!name.endsWith(".d.ts")) continue;
  const file = join(dir, name);
  const text = readFileSync(file, "utf8");
  writeFileSync(file, text.replace(/(from\s+["']\.{1,2}\/[^"']+)\.ts(["'])/g, "$1.js$2"));
}
