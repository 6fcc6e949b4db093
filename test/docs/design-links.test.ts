/**
 * The code cites this repository only. A comment, a test name or a printed string that points
 * a reader somewhere must point at something a clone has: a heading of docs/design.md (the
 * behaviour reference and the design decisions) or a feature's page. This fails when a source
 * file cites a document the repository does not hold (the gateway's original specification
 * by section number, the design notes, the style notes, an issue tracker's number), and when
 * a `docs/NAME.md#heading` (or `bench/README.md#heading`) link names a file or heading that
 * does not exist.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/gateway-process.ts";
import { anchorsOf } from "../support/markdown-anchors.ts";

/** Every folder with source files; their subfolders too, except what is built or installed. */
const SOURCE_ROOTS = ["core", "plugins", "adapters", "test", "scripts", "bench", "examples"];
const SKIPPED_DIRS = new Set(["node_modules", "dist", "results"]);
const SOURCE_FILE = /\.(?:[cm]?[jt]s|[jt]sx)$/;
/** This file names the patterns it looks for. */
const SELF = "test/docs/design-links.test.ts";

function sourceFiles(dir: string): string[] {
  const full = join(repoRoot, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : sourceFiles(path);
    return SOURCE_FILE.test(entry.name) && path !== SELF ? [path] : [];
  });
}

const files = SOURCE_ROOTS.flatMap(sourceFiles).sort();

/** Whitespace, or a comment's continuation (` * ` or `// ` at the start of the next line). */
const GAP = String.raw`(?:\s|\*|//)+`;

/** Citations of documents outside the repository, each with what to write instead. */
const OUTSIDE_CITATIONS: { pattern: RegExp; what: string }[] = [
  {
    pattern: new RegExp(String.raw`(?<!openapi${GAP})\bspec(?:'s)?${GAP}(?:sections?${GAP})?\d+(?:\.\d+)*`, "gi"),
    what: "a section of the original specification: link the heading of docs/design.md that describes the behaviour",
  },
  { pattern: /\bspec's\s+(?:section|table|rule\s+\d)/gi, what: "a part of the original specification: link the heading of docs/design.md" },
  { pattern: /\bsections?\s+\d+(?:\.\d+)*\s+of\s+the\s+spec\b/gi, what: "a section of the original specification: link docs/design.md" },
  { pattern: /gateway-spec/gi, what: "the original specification's file: link docs/design.md" },
  { pattern: /\bDESIGN(?:\.md)?\b/g, what: "the design notes: link the heading of docs/design.md (Decisions, Layout, ...)" },
  { pattern: /\bSTYLE\.md\b/g, what: "the style notes: say the reason in the comment" },
  {
    pattern: new RegExp(String.raw`\bissues?${GAP}#?\d+`, "gi"),
    what: "an issue number: link the feature's page under docs/ (or docs/design.md), or drop the reference",
  },
];

/** `docs/NAME.md`, `bench/README.md`, with an optional `#heading`. */
const DOC_LINK = /(?<![\w/.-])((?:docs|bench)\/[\w.-]+\.md)(?:#([\p{L}\p{N}_-]+))?/gu;

const read = (file: string) => readFileSync(join(repoRoot, file), "utf8");
const lineOf = (text: string, index: number) => text.slice(0, index).split("\n").length;

describe("the code cites this repository only", () => {
  it("finds the source files", () => {
    // A guard against a walk that silently finds nothing.
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain("core/pipeline/pipeline.ts");
  });

  it("no source file cites a document that is not in the repository", () => {
    const found: string[] = [];
    for (const file of files) {
      const text = read(file);
      for (const { pattern, what } of OUTSIDE_CITATIONS) {
        for (const match of text.matchAll(pattern)) {
          found.push(`${file}:${lineOf(text, match.index)}: "${match[0].replace(/\s+/g, " ")}" cites ${what}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it("every docs/*.md link in the source names a file and a heading that exist", () => {
    const anchors = new Map<string, Set<string>>();
    const broken: string[] = [];
    for (const file of files) {
      const text = read(file);
      for (const match of text.matchAll(DOC_LINK)) {
        const [link, page, anchor] = match;
        const where = `${file}:${lineOf(text, match.index)}: ${link}`;
        if (!existsSync(join(repoRoot, page))) {
          broken.push(`${where}: no file ${page}`);
          continue;
        }
        if (anchor === undefined) continue;
        if (!anchors.has(page)) anchors.set(page, anchorsOf(read(page)));
        if (!anchors.get(page)?.has(anchor)) broken.push(`${where}: no heading with anchor #${anchor} in ${page}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("checks what it says: a citation and a broken link in a sample are found", () => {
    const sample = ["/**", " * Resolves the model (spec 4.1", " * rule 3; DESIGN 4; issue 31).", " */"].join("\n");
    const cited = OUTSIDE_CITATIONS.flatMap(({ pattern }) => [...sample.matchAll(pattern)].map((m) => m[0].replace(/\s+/g, " ")));
    expect(cited).toEqual(["spec 4.1", "DESIGN", "issue 31"]);
    const links = [..."see docs/design.md#job-submission, docs/nope.md and bench/README.md#performance".matchAll(DOC_LINK)].map((m) => [m[1], m[2]]);
    expect(links).toEqual([
      ["docs/design.md", "job-submission"],
      ["docs/nope.md", undefined],
      ["bench/README.md", "performance"],
    ]);
    expect(anchorsOf(read("docs/design.md"))).toContain("job-submission");
  });
});
