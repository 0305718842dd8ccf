import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import {
  accessSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { freePort } from "@agentpass/db/testing";
import { type RunningServer, startServer } from "@agentpass/http";
import { loadConfig } from "../../apps/identity/src/config.ts";
import { openIdentityService } from "../../apps/identity/src/service.ts";
import { packedDownloads } from "../../apps/identity/test/support/packed-downloads.ts";

// Every install command the product shows works where it is shown: the landing page's three
// (the CLI, the Node library, the Python package) run as written against a running identity
// service, each into a folder of its own, with no network but loopback: no registry answers.

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Runs a command to its end without blocking this process, which serves what it downloads. */
const run = promisify(execFile);

/** A plain Python (Debian's by default: PYTHON names another); its venv sees no system package. */
function python(): string {
  if (process.env.PYTHON) return process.env.PYTHON;
  try {
    accessSync("/usr/bin/python3", constants.X_OK);
    return "/usr/bin/python3";
  } catch {
    return "python3";
  }
}

/** The text of the `<code>` elements of `page` that start with `command`. */
function commandsOf(page: string, command: string): string[] {
  return [...page.matchAll(/<code>([^<]+)<\/code>/g)]
    .map((match) => (match[1] ?? "").replaceAll("&amp;", "&"))
    .filter((code) => code.startsWith(command));
}

describe("the install commands of the landing page", () => {
  let dir: string;
  let server: RunningServer;
  let close: () => Promise<void>;
  let landing: string;
  /** npm with no registry it could reach and a cache of its own: a fetch from elsewhere fails. */
  let npmEnv: NodeJS.ProcessEnv;
  before(async () => {
    packedDownloads();
    dir = mkdtempSync(join(tmpdir(), "agentpass-installs-"));
    const port = await freePort();
    const loaded = loadConfig({
      DATA_DIR: join(dir, "data"),
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "silent",
    });
    if (!loaded.ok) throw new Error(loaded.error);
    const service = await openIdentityService(loaded.config);
    server = await startServer(service, { port, host: "127.0.0.1" });
    close = async () => {
      await server.close();
      await service.close();
    };
    landing = await (await fetch(`${server.url}/`)).text();
    npmEnv = {
      ...process.env,
      npm_config_registry: "http://127.0.0.1:9/",
      // npm asks the registry about the library's optional peer (hono) and carries on without
      // it; no retries, so that refusal costs no back-off.
      npm_config_fetch_retries: "0",
      npm_config_cache: join(dir, "npm-cache"),
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_update_notifier: "false",
    };
  });
  after(async () => {
    await close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("npm install -g <its URL> installs the CLI, whose agentpass command runs", async () => {
    const [command] = commandsOf(landing, "npm install -g ");
    assert.equal(command, `npm install -g ${server.url}/downloads/agentpass-cli.tgz`);
    const prefix = join(dir, "global");
    // `-g` into a prefix of its own: what the page's command does, without touching the machine.
    await run("sh", ["-c", `${command} --prefix "$1"`, "sh", prefix], { env: npmEnv });
    const { stdout: help } = await run(join(prefix, "bin", "agentpass"), ["--help"]);
    assert.match(help, /agentpass <command>/);
  });

  it("npm install <its URL> adds @agentpass/verify to a project, which imports it", async () => {
    const [command] = commandsOf(landing, "npm install http");
    assert.equal(command, `npm install ${server.url}/downloads/agentpass-verify.tgz`);
    const project = join(dir, "partner");
    mkdirSync(project);
    writeFileSync(join(project, "package.json"), '{ "name": "partner", "private": true }\n');
    await run("sh", ["-c", command ?? ""], { cwd: project, env: npmEnv });
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    assert.equal(
      manifest.dependencies["@agentpass/verify"],
      `${server.url}/downloads/agentpass-verify.tgz`,
      "the project records where it came from",
    );
    const imported = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'const { verify } = await import("@agentpass/verify"); console.log(typeof verify, (await verify("apk_x", "aps_y", "http://127.0.0.1:9")).code);',
      ],
      { cwd: project, encoding: "utf8" },
    );
    assert.equal(imported, "function network_error\n");
  });

  it("serves every /downloads/ path the docs and the packages' READMEs name", async () => {
    const pages = [
      "docs/agents.md",
      "docs/partners.md",
      "docs/quick-start.md",
      "packages/cli/README.md",
      "packages/verify/README.md",
      "packages/python/README.md",
    ];
    const named = new Set<string>();
    for (const page of pages) {
      const text = readFileSync(join(root, page), "utf8");
      for (const [path] of text.matchAll(/\/downloads\/agentpass-[\w.-]+\.(?:tgz|whl)/g)) {
        named.add(path);
      }
    }
    assert.deepEqual([...named].sort(), [
      "/downloads/agentpass-0.1.0-py3-none-any.whl",
      "/downloads/agentpass-cli.tgz",
      "/downloads/agentpass-verify.tgz",
    ]);
    for (const path of named) {
      assert.equal((await fetch(`${server.url}${path}`, { method: "HEAD" })).status, 200, path);
    }
  });

  it("pip install <its URL> installs the Python package in a fresh venv, no index needed", async () => {
    const [command] = commandsOf(landing, "pip install ");
    assert.match(
      command ?? "",
      new RegExp(`^pip install ${server.url}/downloads/agentpass-[\\d.]+-py3-none-any\\.whl$`),
    );
    const venv = join(dir, "venv");
    execFileSync(python(), ["-m", "venv", venv], { stdio: "pipe" });
    // PIP_NO_INDEX: the package has no dependency, so nothing but its URL is ever fetched.
    await run("sh", ["-c", `. "$1/bin/activate" && ${command}`, "sh", venv], {
      env: { ...process.env, PIP_NO_INDEX: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" },
    });
    const imported = execFileSync(
      join(venv, "bin", "python"),
      ["-c", "import agentpass, agentpass.asgi, agentpass.wsgi; print(agentpass.__version__)"],
      { cwd: "/", encoding: "utf8" },
    );
    const pyproject = readFileSync(join(root, "packages/python/pyproject.toml"), "utf8");
    assert.equal(imported.trim(), /^version = "([^"]+)"$/m.exec(pyproject)?.[1]);
  });
});
