import type { DownloadName, Downloads } from "../pages/downloads.ts";
import { html, type SafeHtml } from "./html.ts";

/** How the pages tell a person to install each package: a command that works where it is shown. */
export type InstallCommands = Readonly<Record<DownloadName, SafeHtml>>;

interface PackageInstall {
  /** What it runs on. */
  runtime: string;
  /** The name it will have on its registry. */
  published: string;
  /** The command, given the URL this service serves the package at. */
  fromUrl: (url: string) => string;
  /** The command in a clone of the repository, where `npm install` packs it (npm run prepare). */
  fromClone: string;
}

const PACKAGES: Record<DownloadName, PackageInstall> = {
  cli: {
    runtime: "Node ≥ 20",
    published: "@agentpass/cli is on npm",
    fromUrl: (url) => `npm install -g ${url}`,
    fromClone: "npm install -g packages-dist/agentpass-cli-*.tgz",
  },
  verify: {
    runtime: "Node ≥ 20",
    published: "@agentpass/verify is on npm",
    fromUrl: (url) => `npm install ${url}`,
    fromClone: "npm install /path/to/agentpass/packages-dist/agentpass-verify-*.tgz",
  },
  python: {
    runtime: "Python ≥ 3.9",
    published: "agentpass is on PyPI",
    fromUrl: (url) => `pip install ${url}`,
    fromClone: "pip install /path/to/agentpass/packages-dist/agentpass-*.whl",
  },
};

/**
 * Each package's install line: from this service's own URL while it serves the package (none is
 * on a registry yet), else from a clone of the repository. Never a registry name: `npm install
 * @agentpass/cli` answers 404 until it is published.
 */
export function installCommands(publicUrl: string, downloads: Downloads): InstallCommands {
  const line = (name: DownloadName) => {
    const { runtime, published, fromUrl, fromClone } = PACKAGES[name];
    const download = downloads[name];
    return download
      ? html`<code>${fromUrl(`${publicUrl}${download.path}`)}</code> (${runtime}; served by this AgentPass until ${published})`
      : html`<code>${fromClone}</code> in a clone of the AgentPass repository, after <code>npm install</code> there (${runtime}; this AgentPass serves no copy)`;
  };
  return { cli: line("cli"), verify: line("verify"), python: line("python") };
}
