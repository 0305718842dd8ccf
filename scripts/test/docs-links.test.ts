import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The README is read once by a newcomer: what it does not say, a page under docs/ says. */
const README_MAX_LINES = 200;

/**
 * References a successor reads once (issue 52): one entry per decision, one table per engine.
 * The measurement narrative belongs in git history, not in these files.
 */
const REFERENCE_MAX_LINES = { "docs/decisions.md": 500, "BENCHMARKS.md": 150 };

const lineCount = (file: string): number =>
  readFileSync(join(root, file), "utf8").trimEnd().split("\n").length;

const pages = (): string[] => [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];

/** The text of a page outside its fenced blocks and inline code, where links are links. */
function prose(page: string): string {
  return readFileSync(join(root, page), "utf8")
    .replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "")
    .replace(/`[^`\n]*`/g, "");
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as `-`. */
function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, "utf8").replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading = ""] of text.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every relative link and image of `page`: `[text](target)`, `![alt](target)`. */
function relativeLinks(page: string): string[] {
  return [...prose(page).matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target = ""]) => target)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("the README and docs/", () => {
  it(`keep the README to ${README_MAX_LINES} lines at most`, () => {
    const lines = lineCount("README.md");
    assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  });

  for (const [file, limit] of Object.entries(REFERENCE_MAX_LINES)) {
    it(`keep ${file} to ${limit} lines at most`, () => {
      const lines = lineCount(file);
      assert.ok(lines <= limit, `${file} has ${lines} lines`);
    });
  }

  it("link only to files and headings that exist", () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const target of relativeLinks(page)) {
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? join(root, page) : join(root, dirname(page), path);
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
        } else if (anchor !== undefined) {
          const isMarkdown = statSync(file).isFile() && file.endsWith(".md");
          if (!isMarkdown || !anchorsOf(file).has(anchor)) {
            broken.push(`${page}: ${target} (no heading #${anchor} in ${relative(root, file)})`);
          }
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it("reach every page under docs/ from the README, directly or through another page", () => {
    const reached = new Set(["README.md"]);
    const queue = ["README.md"];
    while (queue.length > 0) {
      const page = queue.shift() as string;
      for (const target of relativeLinks(page)) {
        const file = relative(root, join(root, dirname(page), target.split("#")[0] || page));
        const isPage =
          file.startsWith("docs/") && file.endsWith(".md") && existsSync(join(root, file));
        if (isPage && !reached.has(file)) {
          reached.add(file);
          queue.push(file);
        }
      }
    }
    assert.deepEqual(
      pages().filter((page) => !reached.has(page)),
      [],
    );
  });
});
