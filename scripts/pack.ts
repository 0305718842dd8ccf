// Builds the two publishable packages and packs each into a tarball a partner or an agent can
// install before they are on the registry:  npm run pack  →  packages-dist/*.tgz
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const out = join(root, "packages-dist");
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
for (const name of ["verify", "cli"]) {
  const dir = join(root, "packages", name);
  execFileSync("npm", ["run", "build"], { cwd: dir, stdio: "inherit" });
  execFileSync("npm", ["pack", "--silent", "--pack-destination", out], {
    cwd: dir,
    stdio: "ignore",
  });
}
for (const tarball of readdirSync(out)) console.log(join(out, tarball));
