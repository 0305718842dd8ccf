// Builds the two publishable npm packages and packs each into a tarball, and writes the Python
// package's wheel, which a partner or an agent can install before they are on a registry:
//   npm run pack  →  packages-dist/agentpass-cli-<v>.tgz, agentpass-verify-<v>.tgz,
//                    agentpass-<v>-py3-none-any.whl
// `npm run prepare` runs it with --no-build after building every workspace: the identity service
// serves these files at /downloads/ (apps/identity/src/http/pages/downloads.ts), so a checkout, the
// test command and the image all have them. The packages' tests use the helpers below to check
// what a publish would ship.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildWheel } from "./python-wheel.ts";

const root = resolve(import.meta.dirname, "..");

/** The folders under packages/ that are published to npm. */
const PUBLISHED_PACKAGES = ["verify", "cli"] as const;
type PublishedPackage = (typeof PUBLISHED_PACKAGES)[number];

/** Builds packages/<name> (its dist, JS and declarations), as a publish ships it. */
function buildPackage(name: PublishedPackage): void {
  const run = spawnSync("npm", ["run", "build"], {
    cwd: join(root, "packages", name),
    encoding: "utf8",
  });
  if (run.status !== 0) {
    throw new Error(`npm run build failed in packages/${name}:\n${run.stdout}${run.stderr}`);
  }
}

/** Packs the built packages/<name> into `destination`; returns the tarball's path. */
function packPackage(name: PublishedPackage, destination: string): string {
  const [packed] = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", destination], {
      cwd: join(root, "packages", name),
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }),
  ) as { filename: string }[];
  if (!packed) throw new Error(`npm pack wrote no tarball for packages/${name}`);
  return join(destination, packed.filename);
}

/** The package.json a tarball holds: what the registry would publish as the package's metadata. */
function readPackedManifest(tarball: string): Record<string, unknown> {
  return JSON.parse(
    execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }),
  ) as Record<string, unknown>;
}

/** What `npm publish --dry-run` says it would publish of the built packages/<name>. */
interface PublishDryRun {
  /** The exit status: 0 when npm would publish. */
  status: number;
  /** The name and version npm would publish. */
  id: string;
  /** The paths of the files in the package, as npm lists them. */
  files: string[];
  /** npm's warnings: "auto-corrected some errors in your package.json", for one. */
  warnings: string[];
}

/** Runs `npm publish --dry-run --json` for packages/<name>: nothing reaches the registry. */
function publishDryRun(name: PublishedPackage): PublishDryRun {
  const run = spawnSync("npm", ["publish", "--dry-run", "--json"], {
    cwd: join(root, "packages", name),
    encoding: "utf8",
  });
  // npm 11 keys the answer by package name; npm 10 answered the package's object alone.
  const answer = JSON.parse(run.stdout || "{}") as Record<string, unknown>;
  const entry = ("files" in answer ? answer : (Object.values(answer)[0] ?? {})) as {
    id?: string;
    files?: { path: string }[];
  };
  return {
    status: run.status ?? 1,
    id: String(entry.id),
    files: (entry.files ?? []).map((file) => file.path),
    // Not having logged in to the registry is expected of a dry run; it is not a fault.
    warnings: run.stderr
      .split("\n")
      .filter(
        (line) => line.startsWith("npm warn") && !line.includes("requires you to be logged in"),
      ),
  };
}

/** A package as a release would ship it: built, packed, and what a publish would say. */
export interface Release {
  tarball: string;
  /** The package.json in the tarball. */
  manifest: Record<string, unknown>;
  published: PublishDryRun;
}

/**
 * Packs the built packages/<name> into `destination` and dry-runs its publish. The build is the
 * one the test command runs first (`npm run test:suites`): rebuilding here, in place, would take
 * `dist` away from the suites running beside this one.
 */
export function prepareRelease(name: PublishedPackage, destination: string): Release {
  const tarball = packPackage(name, destination);
  return { tarball, manifest: readPackedManifest(tarball), published: publishDryRun(name) };
}

/** Whether a file of packages-dist is one `packDownloads` writes (an older version's included). */
function isPackedDownload(name: string): boolean {
  return /^agentpass-(cli-|verify-)?[0-9][\w.+-]*(\.tgz|-py3-none-any\.whl)$/.test(name);
}

/**
 * Packs the built npm packages and the Python wheel into `out`, replacing the files an earlier
 * run wrote there and nothing else (packages-dist/openapi/ is lint:openapi's). Each file is
 * written beside and renamed into place, so a service starting meanwhile reads whole files.
 */
function packDownloads(out: string): string[] {
  mkdirSync(out, { recursive: true });
  const staging = join(out, `.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging);
  try {
    for (const name of PUBLISHED_PACKAGES) packPackage(name, staging);
    buildWheel(join(root, "packages", "python"), staging);
    for (const old of readdirSync(out).filter(isPackedDownload)) rmSync(join(out, old));
    const written = readdirSync(staging).sort();
    for (const name of written) renameSync(join(staging, name), join(out, name));
    return written.map((name) => join(out, name));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Where `npm run pack` writes, and where the identity service reads what it serves. */
const PACKAGES_DIST = join(root, "packages-dist");

if (import.meta.main) {
  const { values } = parseArgs({ options: { "no-build": { type: "boolean", default: false } } });
  if (!values["no-build"]) for (const name of PUBLISHED_PACKAGES) buildPackage(name);
  for (const path of packDownloads(PACKAGES_DIST)) console.log(path);
}
