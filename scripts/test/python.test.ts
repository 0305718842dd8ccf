import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The Debian packages the Python suite needs (scripts/ensure-test-tools.ts installs them). */
const DEBIAN_PACKAGES =
  "python3-pytest python3-fastapi python3-flask python3-httpx python3-requests python3-build python3-venv";

/**
 * Debian's interpreter, where those packages install (a `python3` earlier on PATH, from pyenv
 * say, does not see them); PYTHON names another.
 */
function python(): string {
  if (process.env.PYTHON) return process.env.PYTHON;
  try {
    accessSync("/usr/bin/python3", constants.X_OK);
    return "/usr/bin/python3";
  } catch {
    return "python3";
  }
}

describe("the Python package (packages/python)", () => {
  it("passes its pytest suite against the real services, and builds an sdist and a wheel", {
    timeout: 15 * 60_000,
  }, async () => {
    const interpreter = python();
    const probe = spawnSync(
      interpreter,
      ["-c", "import pytest, fastapi, flask, httpx, requests, build, setuptools, ensurepip"],
      { encoding: "utf8" },
    );
    assert.equal(
      probe.status,
      0,
      `${interpreter} lacks what the Python tests need (${probe.error?.message ?? probe.stderr.trim()}).\n` +
        `On Debian or Ubuntu: sudo apt-get install -y ${DEBIAN_PACKAGES}`,
    );
    const { code, output } = await new Promise<{ code: number | null; output: string }>(
      (resolve) => {
        const child = spawn(
          interpreter,
          ["-m", "pytest", "-q", "-p", "no:cacheprovider", "packages/python/tests"],
          {
            cwd: ROOT,
            // The services run on this Node; no bytecode caches are left in the working tree.
            env: { ...process.env, AGENTPASS_NODE: process.execPath, PYTHONDONTWRITEBYTECODE: "1" },
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
        });
        child.stderr.on("data", (chunk: Buffer) => {
          output += chunk.toString();
        });
        child.on("close", (exitCode) => resolve({ code: exitCode, output }));
      },
    );
    assert.equal(code, 0, `pytest failed:\n${output.slice(-20_000)}`);
    assert.match(output, /\d+ passed/);
  });
});
