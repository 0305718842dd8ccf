import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { type Downloads, readDownloads } from "../../src/http/pages/downloads.ts";

const PACK = join(import.meta.dirname, "..", "..", "..", "..", "scripts", "pack.ts");

/**
 * What the service serves from packages-dist, packed first (`npm run pack`) when a package is
 * missing there: the test command's `npm run prepare` packs them, a lone `node --test` may not
 * have. Call it before the service starts, which reads the folder once.
 */
export function packedDownloads(): Downloads {
  const found = readDownloads();
  if (found.cli && found.verify && found.python) return found;
  execFileSync(process.execPath, [PACK], { stdio: "ignore" });
  return readDownloads();
}
