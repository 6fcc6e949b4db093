/**
 * The doc-snippet check: the docs cannot rot.
 *
 * - Every ```sh / ```bash / ```shell block of README.md, docs/*.md and bench/README.md runs,
 *   in bash, against a gateway started as `npm start` starts it (the built gateway, the
 *   repository's config.example.yaml copied as ./config.yaml in its working directory, the
 *   tour's fake backends), with `localhost:8080` rewritten to the test's port. It must exit 0,
 *   and its output must contain each `<!-- expect: TEXT -->` line written above the block.
 * - A block that cannot run here (it starts a process, needs another config or an outside
 *   service, takes minutes) carries `<!-- not-run: REASON -->` right above it; the reason says
 *   what runs it instead. A block with neither runs.
 * - Every relative link points at a file that exists, and its `#anchor` at a heading there.
 *
 * Node only: the gateway under test is the compiled one `npm start` runs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { onDeno, repoRoot } from "../support/gateway-process.ts";
import { anchorsOf } from "../support/markdown-anchors.ts";
import { freePort } from "../support/servers.ts";
import { startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";

const docFiles = [
  ...readdirSync(join(repoRoot, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
  "bench/README.md",
  // Last: the tour's step 4 turns a rate limit on.
  "README.md",
];

/** Pages another change adds; a link to one is accepted until it exists. Empty this list once they do. */
const pagesBeingWritten: string[] = [];

interface Block {
  file: string;
  line: number;
  code: string;
  notRun?: string;
  expects: string[];
}

const runnable = new Set(["sh", "bash", "shell"]);

/** The shell blocks of a markdown text, with the `<!-- ... -->` marks right above each. */
function shellBlocks(file: string, text: string): Block[] {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2];
    let end = i + 1;
    while (end < lines.length && !lines[end].trim().startsWith(fence)) end++;
    if (runnable.has(open[3])) {
      const marks: string[] = [];
      for (let j = i - 1; j >= 0 && /^\s*<!--.*-->\s*$/.test(lines[j]); j--) marks.unshift(lines[j].trim());
      const mark = (name: string) => marks.map((m) => new RegExp(`^<!--\\s*${name}:\\s*(.*?)\\s*-->$`).exec(m)?.[1]).filter((v) => v !== undefined);
      blocks.push({ file, line: i + 1, code: lines.slice(i + 1, end).join("\n"), notRun: mark("not-run")[0], expects: mark("expect") });
    }
    i = end;
  }
  return blocks;
}

/** Relative links `[text](target)` outside code blocks and code spans. */
function relativeLinks(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker) {
      if (fence === undefined) fence = marker;
      else if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    for (const match of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(match[1])) links.push({ target: match[1], line: index + 1 });
    }
  });
  return links;
}

const read = (file: string) => readFileSync(join(repoRoot, file), "utf8");

describe("docs: relative links", () => {
  it.each(docFiles)("%s links to files and headings that exist", (file) => {
    const broken: string[] = [];
    for (const { target, line } of relativeLinks(read(file))) {
      const [path, anchor] = target.split("#", 2);
      const targetFile = path === "" ? file : relative(repoRoot, resolve(repoRoot, dirname(file), path));
      if (!existsSync(join(repoRoot, targetFile))) {
        if (!pagesBeingWritten.includes(targetFile)) broken.push(`${file}:${line}: ${target}: no file ${targetFile}`);
        continue;
      }
      if (anchor && targetFile.endsWith(".md") && !anchorsOf(read(targetFile)).has(anchor)) {
        broken.push(`${file}:${line}: ${target}: no heading with anchor #${anchor} in ${targetFile}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("docs: every shell block is marked or runs", () => {
  it.each(docFiles)("%s: a not-run mark gives its reason", (file) => {
    const unexplained = shellBlocks(file, read(file))
      .filter((block) => block.notRun === "")
      .map((block) => `${file}:${block.line}`);
    expect(unexplained).toEqual([]);
  });
});

const blocksToRun = docFiles.flatMap((file) => shellBlocks(file, read(file))).filter((block) => block.notRun === undefined);

describe.skipIf(onDeno)("docs: shell blocks against a started gateway", () => {
  let dir: string;
  let gateway: ChildProcess | undefined;
  let gatewayOutput = "";
  let port: number;
  let jobId = "";
  const stops: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    // As the tour's first terminal: the fake backends, config.example.yaml copied as config.yaml,
    // `npm start` (the built gateway, PORT chosen by the test instead of :8080).
    const transcription = await startInferenceBackend(0);
    const llm: FakeBackend = await startLlmBackend();
    stops.push(() => transcription.close(), () => llm.stop());
    const closedPort = await freePort();
    const example = read("config.example.yaml")
      .replaceAll("http://127.0.0.1:9001", transcription.url)
      .replaceAll("http://127.0.0.1:9002", llm.url)
      .replaceAll("http://127.0.0.1:9003", `http://127.0.0.1:${closedPort}`);
    dir = mkdtempSync(join(tmpdir(), "gw-docs-"));
    writeFileSync(join(dir, "config.example.yaml"), example);
    writeFileSync(join(dir, "config.yaml"), example);
    // Files the docs' examples upload; node_modules so `import "openai"` resolves as in a clone.
    writeFileSync(join(dir, "meeting.wav"), "hello\n");
    writeFileSync(join(dir, "audio.wav"), "hello\n");
    symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
    // dist/ so the docs' `node dist/adapters/node/cli.js ...` commands run as in a clone.
    symlinkSync(join(repoRoot, "dist"), join(dir, "dist"), "dir");

    port = await freePort();
    const built = join(repoRoot, "dist/adapters/node/cli.js");
    if (!existsSync(built)) throw new Error(`${built} is missing: run "npm run build" (npm test does it)`);
    const { CONFIG_PATH: _path, GATEWAY_ADDR: _addr, ...env } = process.env;
    gateway = spawn(process.execPath, [built], { cwd: dir, env: { ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
    gateway.stdout?.on("data", (chunk: Buffer) => (gatewayOutput += chunk.toString()));
    gateway.stderr?.on("data", (chunk: Buffer) => (gatewayOutput += chunk.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (gateway.exitCode !== null) throw new Error(`gateway exited with ${gateway.exitCode}:\n${gatewayOutput}`);
      const up = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (up) break;
      if (Date.now() > deadline) throw new Error(`gateway not up within 20 s:\n${gatewayOutput}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(gatewayOutput).toContain('"path":"config.yaml"');

    // A job for the blocks that read, cancel or list one ($ID).
    const form = new FormData();
    form.append("file", new Blob(["hello\n"]), "meeting.wav");
    const submitted = (await (await fetch(`http://127.0.0.1:${port}/jobs/transcription`, { method: "POST", body: form })).json()) as { job_id: string };
    jobId = submitted.job_id;
  }, 60_000);

  afterAll(async () => {
    if (gateway && gateway.exitCode === null) {
      const exited = new Promise((r) => gateway?.once("exit", r));
      gateway.kill("SIGTERM");
      await exited;
    }
    await Promise.all(stops.map((stop) => stop()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each(blocksToRun.map((block) => [`${block.file}:${block.line}`, block] as const))("%s", async (_name, block) => {
    const script = block.code.replaceAll("localhost:8080", `127.0.0.1:${port}`);
    const { code, output } = await runBash(script, dir, { ID: jobId });
    const where = `${block.file}:${block.line} exited ${code}:\n${output}\n--- gateway log tail:\n${gatewayOutput.slice(-2000)}`;
    expect(code, where).toBe(0);
    for (const text of block.expects) expect(output, where).toContain(text);
  });
});

async function runBash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn("bash", ["-e", "-o", "pipefail", "-c", script], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (exitCode) => r(exitCode)));
  clearTimeout(timer);
  return { code, output };
}
