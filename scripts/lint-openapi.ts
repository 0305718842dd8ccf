/**
 * Writes the OpenAPI documents both services publish (generated from their endpoint definitions)
 * to `packages-dist/openapi/`, then lints them with Redocly's recommended rules: any error fails.
 *
 *   npm run lint:openapi
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../apps/identity/src/config.ts";
import { openIdentityService } from "../apps/identity/src/service.ts";
import { loadNotesConfig } from "../apps/notes/src/config.ts";
import { openNotesService } from "../apps/notes/src/service.ts";

const out = join(import.meta.dirname, "..", "packages-dist", "openapi");
const dataDir = mkdtempSync(join(tmpdir(), "agentpass-openapi-"));
const env = {
  DATA_DIR: dataDir,
  LOG_LEVEL: "silent",
  PUBLIC_URL: "https://agentpass.example",
  SMTP_URL: "smtp://127.0.0.1:2525",
};

try {
  mkdirSync(out, { recursive: true });
  const identityConfig = loadConfig(env);
  const notesConfig = loadNotesConfig({ ...env, PUBLIC_URL: "https://notes.agentpass.example" });
  if (!identityConfig.ok) throw new Error(identityConfig.error);
  if (!notesConfig.ok) throw new Error(notesConfig.error);
  const services = {
    identity: await openIdentityService(identityConfig.config),
    notes: await openNotesService(notesConfig.config),
  };
  const files: string[] = [];
  for (const [name, service] of Object.entries(services)) {
    const response = await service.request("/api/openapi.json");
    if (response.status !== 200)
      throw new Error(`${name}: /api/openapi.json answered ${response.status}`);
    const file = join(out, `${name}.json`);
    writeFileSync(file, `${JSON.stringify(await response.json(), null, 2)}\n`);
    files.push(file);
    await service.close();
  }
  const redocly = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");
  const lint = spawnSync(
    process.execPath,
    [redocly, "lint", "--extends=recommended", "--format=stylish", ...files],
    {
      stdio: "inherit",
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    },
  );
  process.exitCode = lint.status ?? 1;
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
