// Builds the pure-Python wheel of packages/python with Node alone, so that `npm run pack` and the
// image's build (which has no Python) make it: a wheel installs with a plain `pip install <url>`,
// where an sdist needs a build backend from an index (build isolation) or the machine's own
// setuptools. packages/python/tests/test_packaging.py compares it with the wheel setuptools builds.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { crc32, deflateRawSync } from "node:zlib";

/** What the wheel's metadata says, read from pyproject.toml's `[project]` table. */
interface PythonProject {
  name: string;
  version: string;
  description: string;
  requiresPython: string;
  license: string;
  author: string;
  keywords: string[];
  classifiers: string[];
  dependencies: string[];
  /** `[project.optional-dependencies]`: the requirements of each extra (`agentpass[dpop]`). */
  extras: Record<string, string[]>;
}

/**
 * The `[project]` table's fields the wheel needs. pyproject.toml is ours and written as plain
 * `key = "value"` and `key = [ "…", … ]` lines; a field of another shape fails here, loudly.
 */
function missing(key: string): never {
  throw new Error(`pyproject.toml: [project] has no ${key}`);
}

function readPythonProject(pyproject: string): PythonProject {
  const table = /^\[project\]\n([\s\S]*?)(?=^\[)/m.exec(pyproject)?.[1] ?? "";
  const text = (key: string) => {
    const value = new RegExp(`^${key} = "([^"]*)"$`, "m").exec(table)?.[1];
    if (value === undefined) throw new Error(`pyproject.toml: [project] has no ${key} = "…"`);
    return value;
  };
  const list = (key: string) => {
    const body = new RegExp(`^${key} = \\[([^\\]]*)\\]`, "m").exec(table)?.[1];
    if (body === undefined) throw new Error(`pyproject.toml: [project] has no ${key} = [ … ]`);
    return [...body.matchAll(/"([^"]*)"/g)].map((match) => match[1] ?? "");
  };
  const license = /^license = \{ text = "([^"]*)" \}$/m.exec(table)?.[1];
  if (!license) throw new Error('pyproject.toml: [project] has no license = { text = "…" }');
  return {
    name: text("name"),
    version: text("version"),
    description: text("description"),
    requiresPython: text("requires-python"),
    license,
    author: /^authors = \[\{ name = "([^"]*)" \}\]$/m.exec(table)?.[1] ?? missing("authors"),
    keywords: list("keywords"),
    classifiers: list("classifiers"),
    dependencies: list("dependencies"),
    extras: readExtras(pyproject),
  };
}

/** `[project.optional-dependencies]`, written as `name = [ "…", … ]` lines; none when absent. */
function readExtras(pyproject: string): Record<string, string[]> {
  const table =
    /^\[project\.optional-dependencies\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(pyproject)?.[1] ?? "";
  const extras: Record<string, string[]> = {};
  for (const [, name = "", body = ""] of table.matchAll(/^([\w-]+) = \[([^\]]*)\]/gm)) {
    extras[name] = [...body.matchAll(/"([^"]*)"/g)].map((match) => match[1] ?? "");
  }
  return extras;
}

/** The wheel's file name (PEP 427): pip takes a wheel by URL only under a name of this form. */
function wheelFileName(project: PythonProject): string {
  return `${project.name}-${project.version}-py3-none-any.whl`;
}

/**
 * Writes the wheel of the Python package at `packageDir` (pyproject.toml, README.md and
 * src/<name>/) into `destination`; returns its path. The same sources give the same bytes (fixed
 * times, sorted entries), so a rebuild keeps the served file's ETag.
 */
export function buildWheel(packageDir: string, destination: string): string {
  const project = readPythonProject(readFileSync(join(packageDir, "pyproject.toml"), "utf8"));
  if (project.dependencies.length > 0) {
    throw new Error("the wheel writes no Requires-Dist: add it here before adding a dependency");
  }
  const source = join(packageDir, "src");
  const files = listFiles(join(source, project.name)).map((path) => ({
    name: relative(source, path),
    data: readFileSync(path),
  }));
  const distInfo = `${project.name}-${project.version}.dist-info`;
  const readme = readFileSync(join(packageDir, "README.md"), "utf8");
  files.push(
    { name: `${distInfo}/METADATA`, data: Buffer.from(metadata(project, readme)) },
    // As setuptools ships it: the license text beside the metadata that names it.
    { name: `${distInfo}/LICENSE`, data: readFileSync(join(packageDir, "LICENSE")) },
    {
      name: `${distInfo}/WHEEL`,
      data: Buffer.from(
        "Wheel-Version: 1.0\nGenerator: agentpass scripts/python-wheel.ts\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
      ),
    },
    { name: `${distInfo}/top_level.txt`, data: Buffer.from(`${project.name}\n`) },
  );
  const record = [
    ...files.map(({ name, data }) => `${name},sha256=${digest(data)},${data.length}`),
    `${distInfo}/RECORD,,`,
  ];
  files.push({ name: `${distInfo}/RECORD`, data: Buffer.from(`${record.join("\n")}\n`) });
  const path = join(destination, wheelFileName(project));
  writeFileSync(path, zip(files));
  return path;
}

/** Core metadata 2.1, as setuptools writes it for this project. */
function metadata(project: PythonProject, readme: string): string {
  return [
    "Metadata-Version: 2.1",
    `Name: ${project.name}`,
    `Version: ${project.version}`,
    `Summary: ${project.description}`,
    `Author: ${project.author}`,
    `License: ${project.license}`,
    `Keywords: ${project.keywords.join(",")}`,
    ...project.classifiers.map((classifier) => `Classifier: ${classifier}`),
    `Requires-Python: ${project.requiresPython}`,
    "Description-Content-Type: text/markdown",
    "License-File: LICENSE",
    ...Object.entries(project.extras).flatMap(([extra, requirements]) => [
      `Provides-Extra: ${extra}`,
      ...requirements.map((requirement) => `Requires-Dist: ${requirement}; extra == "${extra}"`),
    ]),
    "",
    readme,
  ].join("\n");
}

/** The package's files, sorted, without bytecode caches. */
function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && !entry.parentPath.includes("__pycache__"))
    .filter((entry) => !entry.name.endsWith(".pyc"))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/** RECORD's hash form: sha256, URL-safe base64 without padding. */
function digest(data: Buffer): string {
  return createHash("sha256").update(data).digest("base64url");
}

/** 1980-01-01 00:00, the earliest time a zip entry holds (DOS date and time fields). */
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;

/** A zip archive of `files`, each deflated (the format a wheel is). */
function zip(files: { name: string; data: Buffer }[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const { name, data } of files) {
    const fileName = Buffer.from(name);
    const packed = deflateRawSync(data);
    const checksum = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6); // names are UTF-8
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(checksum, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fileName.length, 26);
    local.writeUInt16LE(0, 28);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, zip 2.0: the mode below is read
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(0x0800, 8);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt16LE(DOS_TIME, 12);
    entry.writeUInt16LE(DOS_DATE, 14);
    entry.writeUInt32LE(checksum, 16);
    entry.writeUInt32LE(packed.length, 20);
    entry.writeUInt32LE(data.length, 24);
    entry.writeUInt16LE(fileName.length, 28);
    entry.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
    entry.writeUInt32LE(offset, 42);
    parts.push(local, fileName, packed);
    central.push(entry, fileName);
    offset += local.length + fileName.length + packed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}
