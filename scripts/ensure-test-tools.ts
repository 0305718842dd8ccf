/**
 * Run before the tests (`npm test`, `npm run test:all`): makes sure the Debian programs the suites
 * drive are installed, so a fresh machine passes the README's one test command.
 * - Chromium, for the browser tests (playwright-core drives it; no tool ever downloads a browser
 *   of its own);
 * - haproxy, for the per-address limits behind a proxy;
 * - with `--postgres`: pgbouncer, for the PostgreSQL suites through a pooler;
 * - Debian's Python 3 with pytest, FastAPI, Flask, httpx, requests, build and venv, for the Python
 *   package's suite (packages/python, run by scripts/test/python.test.ts).
 *
 * A missing one is installed with `apt-get install -y <package>` (after `apt-get update` if that
 * fails) when this runs as root on a machine with apt-get; otherwise it stops and says exactly
 * what to install.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { parseArgs } from "node:util";

interface Tool {
  /** The Debian package that installs it. */
  debianPackage: string;
  /** The variable that points the tests at another binary. */
  pathVariable: string;
  /** Where Debian's package puts it: the tests' default. */
  debianPath: string;
  /** What the tests use it for, for the message. */
  usedBy: string;
}

const TOOLS: Tool[] = [
  {
    debianPackage: "chromium",
    pathVariable: "CHROMIUM_PATH",
    debianPath: "/usr/bin/chromium",
    usedBy: "the browser tests",
  },
  {
    debianPackage: "haproxy",
    pathVariable: "HAPROXY_PATH",
    debianPath: "/usr/sbin/haproxy",
    usedBy: "the tests behind a proxy",
  },
];

const POSTGRES_TOOLS: Tool[] = [
  {
    debianPackage: "pgbouncer",
    pathVariable: "PGBOUNCER_PATH",
    debianPath: "/usr/sbin/pgbouncer",
    usedBy: "the PostgreSQL tests through a pooler",
  },
];

const APT_GET = "/usr/bin/apt-get";

/** Debian's interpreter, where the python3-* packages install; PYTHON names another. */
const PYTHON = process.env.PYTHON || "/usr/bin/python3";

/** Python modules the Python package's tests import, by the Debian package that installs each. */
const PYTHON_MODULES: { debianPackage: string; module: string }[] = [
  { debianPackage: "python3-pytest", module: "pytest" },
  { debianPackage: "python3-fastapi", module: "fastapi" },
  { debianPackage: "python3-flask", module: "flask" },
  { debianPackage: "python3-httpx", module: "httpx" },
  { debianPackage: "python3-requests", module: "requests" },
  { debianPackage: "python3-build", module: "build" },
  { debianPackage: "python3-venv", module: "ensurepip" },
  // The deploy recipe's compose.yaml is read with it (scripts/test/deploy-files.test.ts).
  { debianPackage: "python3-yaml", module: "yaml" },
];

function missingPythonPackages(): string[] {
  return PYTHON_MODULES.filter(
    ({ module }) => spawnSync(PYTHON, ["-c", `import ${module}`], { stdio: "ignore" }).status !== 0,
  ).map(({ debianPackage }) => debianPackage);
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The binary the tests will run for `tool`: the one its variable names, or Debian's. */
function pathOf(tool: Tool): string {
  return process.env[tool.pathVariable] || tool.debianPath;
}

function aptGetInstall(packages: string[]): boolean {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const run = (args: string[]) =>
    spawnSync(APT_GET, args, { stdio: ["ignore", "inherit", "inherit"], env }).status === 0;
  // A fresh machine's package lists may be missing or stale: update only when the install fails.
  return (
    run(["install", "-y", ...packages]) || (run(["update"]) && run(["install", "-y", ...packages]))
  );
}

function explain(tools: Tool[]): string {
  const lines = tools.map((tool) =>
    process.env[tool.pathVariable]
      ? `  - ${tool.pathVariable}=${pathOf(tool)} (${tool.usedBy}) is not an executable: point it ` +
        `at one, or unset it and install Debian's ${tool.debianPackage}`
      : `  - ${tool.debianPath} (${tool.usedBy}) is missing: install Debian's ` +
        `${tool.debianPackage}, or set ${tool.pathVariable} to another binary`,
  );
  const packages = tools.map((tool) => tool.debianPackage).join(" ");
  return [
    "The tests need programs this machine does not have:",
    ...lines,
    `On Debian or Ubuntu: sudo apt-get install -y ${packages}`,
  ].join("\n");
}

const { values } = parseArgs({ options: { postgres: { type: "boolean", default: false } } });
const needed = values.postgres ? [...TOOLS, ...POSTGRES_TOOLS] : TOOLS;
const missing = needed.filter((tool) => !isExecutable(pathOf(tool)));
// A binary a variable names elsewhere is the operator's to provide: apt-get would not put it there.
const installable = missing.filter((tool) => !process.env[tool.pathVariable]);

if (installable.length > 0 && process.getuid?.() === 0 && isExecutable(APT_GET)) {
  const packages = installable.map((tool) => tool.debianPackage);
  console.error(`Installing what the tests need: apt-get install -y ${packages.join(" ")}`);
  aptGetInstall(packages);
}

const stillMissing = missing.filter((tool) => !isExecutable(pathOf(tool)));
if (stillMissing.length > 0) {
  console.error(explain(stillMissing));
  process.exit(1);
}

const pythonPackages = missingPythonPackages();
// An interpreter PYTHON names elsewhere is the operator's to provide, as a binary's variable is.
if (
  pythonPackages.length > 0 &&
  !process.env.PYTHON &&
  process.getuid?.() === 0 &&
  isExecutable(APT_GET)
) {
  console.error(`Installing what the tests need: apt-get install -y ${pythonPackages.join(" ")}`);
  aptGetInstall(pythonPackages);
}
const pythonStillMissing = missingPythonPackages();
if (pythonStillMissing.length > 0) {
  const install = `sudo apt-get install -y ${pythonStillMissing.join(" ")}`;
  console.error(
    process.env.PYTHON
      ? `PYTHON=${PYTHON} cannot import what the Python package's tests need: install it there, ` +
          `or unset PYTHON and, on Debian or Ubuntu: ${install}`
      : `The Python package's tests need modules ${PYTHON} cannot import.\n` +
          `On Debian or Ubuntu: ${install}`,
  );
  process.exit(1);
}
