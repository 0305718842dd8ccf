import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { COMMON_ERRORS, definePage, HttpError, type Page } from "@agentpass/http";

/**
 * Where `npm run pack` writes the packages (scripts/pack.ts), at the repository's root whatever
 * the working folder: `npm run prepare` fills it in a checkout, in the test command and in the
 * image's build.
 */
const PACKAGES_DIST = join(import.meta.dirname, "..", "..", "..", "..", "..", "packages-dist");

/** The packages the service serves until they are on a registry. */
export type DownloadName = "cli" | "verify" | "python";

/** One package file as served: read once, at start. */
interface Download {
  /** Where it is served: `/downloads/agentpass-cli.tgz`. */
  path: string;
  /** Its file name in packages-dist, with its version (the name a download is saved under). */
  file: string;
  type: string;
  data: Buffer;
  /** A strong validator: the file's SHA-256. */
  etag: string;
}

export type Downloads = Readonly<Partial<Record<DownloadName, Download>>>;

/**
 * How each package's file is found in packages-dist, and the path it is served at. The npm
 * tarballs keep one path across versions (the pages and docs name it); pip takes a wheel by URL
 * only under its own file name (PEP 427), so the wheel is served under that name.
 */
interface PackageFile {
  file: RegExp;
  type: string;
  path: (file: string) => string;
}
const PACKAGE_FILES: Record<DownloadName, PackageFile> = {
  cli: {
    file: /^agentpass-cli-[0-9][\w.+-]*\.tgz$/,
    type: "application/gzip",
    path: () => "/downloads/agentpass-cli.tgz",
  },
  verify: {
    file: /^agentpass-verify-[0-9][\w.+-]*\.tgz$/,
    type: "application/gzip",
    path: () => "/downloads/agentpass-verify.tgz",
  },
  python: {
    file: /^agentpass-[0-9][\w.+]*-py3-none-any\.whl$/,
    type: "application/zip",
    path: (file) => `/downloads/${file}`,
  },
};

/**
 * The packages in `folder`, read whole (each is tens of kilobytes). A package without a file is
 * left out: its path answers 404 and the pages say how to install it from the repository. Of two
 * versions (pack replaces its files, so only by hand), the last by name is served.
 */
export function readDownloads(folder: string = PACKAGES_DIST): Downloads {
  let files: string[];
  try {
    files = readdirSync(folder).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  const downloads: Partial<Record<DownloadName, Download>> = {};
  for (const [name, kind] of Object.entries(PACKAGE_FILES) as [DownloadName, PackageFile][]) {
    const file = files.findLast((candidate) => kind.file.test(candidate));
    if (!file) continue;
    const data = readFileSync(join(folder, file));
    const etag = `"${createHash("sha256").update(data).digest("base64url")}"`;
    downloads[name] = { path: kind.path(file), file, type: kind.type, data, etag };
  }
  return downloads;
}

/** A download may be cached for an hour, then revalidated by its ETag (a new build changes it). */
const DOWNLOAD_CACHE = "public, max-age=3600";

/** `GET /downloads/{file}` (and HEAD): the packages this service serves, 404 JSON for others. */
export function downloadRoutes(downloads: Downloads): Page[] {
  const byPath = new Map(Object.values(downloads).map((download) => [download.path, download]));
  return [
    definePage({
      method: "GET",
      path: "/downloads/{file}",
      handle: (request) => {
        const download = byPath.get(request.path);
        if (!download) return { status: 404, body: new HttpError(COMMON_ERRORS.not_found).body };
        const headers = { ETag: download.etag, "Cache-Control": DOWNLOAD_CACHE };
        if (matchesEtag(request.header("if-none-match"), download.etag)) {
          return { status: 304, headers };
        }
        return {
          status: 200,
          content: { type: download.type, data: download.data },
          headers: { ...headers, "Content-Disposition": `attachment; filename="${download.file}"` },
        };
      },
    }),
  ];
}

/** Whether an If-None-Match header names `etag` (or is `*`), by the weak comparison of RFC 9110. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(",")
    .map((tag) => tag.trim().replace(/^W\//, ""))
    .some((tag) => tag === "*" || tag === etag);
}
