/**
 * `npm start` as people and supervisors run it (Node only: it is npm's script). With `dist/` up
 * to date it compiles nothing; with `--silent` every line it prints is the gateway's JSON; and a
 * SIGTERM to the npm process reaches the gateway (the script `exec`s node), which stops: no
 * orphan left serving; nor after a SIGKILL to npm, which the gateway notices (its parent is
 * gone). When its build (`prestart`) has something to compile it says so in one
 * line on stderr, shown on a scratch project so the suite's dist/ stays as it is.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { onDeno, repoRoot, waitUntil } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const built = ["dist/.tsbuildinfo", "dist/adapters/node/cli.js", "dist/core/gateway.js"].map((file) => join(repoRoot, file));

const answers = (url: string) => fetch(url).then((r) => r.ok, () => false);

/** `npm run prestart --silent -- PROJECT`: the build `npm start` runs first, on another project. */
async function prestart(project: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(npm, ["run", "prestart", "--silent", "--", project], { cwd: repoRoot });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe.skipIf(onDeno)("npm start", () => {
  it("compiles nothing when dist/ is up to date, prints only JSON lines with --silent, and stops with npm on SIGTERM", async () => {
    for (const file of built) if (!existsSync(file)) throw new Error(`${file} is missing: run "npm run build" (npm test does it)`);
    const before = built.map((file) => statSync(file).mtimeMs);
    const port = await freePort();
    const config = join(mkdtempSync(join(tmpdir(), "gw-npm-start-")), "config.yaml");
    writeFileSync(config, `services:\n  - type: echo\n    model: echo\n    operations:\n      run: ["/v1/echo"]\n    inference_url: "http://127.0.0.1:9"\n`);
    const { CONFIG_PATH: _c, GATEWAY_ADDR: _g, PORT: _p, ...env } = process.env;
    const child = spawn(npm, ["start", "--silent", "--", "--config", config, "--port", String(port)], {
      cwd: repoRoot,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    // "exit", not "close": an orphaned gateway would hold npm's pipes open.
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const url = `http://127.0.0.1:${port}/health`;
    try {
      await waitUntil(
        async () => {
          if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
          return await answers(url);
        },
        60_000,
        () => `npm start: no /health on ${port}:\n${output}`,
      );
      // Up to date: the incremental build wrote no file.
      const rewritten = built.filter((file, i) => statSync(file).mtimeMs !== before[i]);
      expect(rewritten).toEqual([]);

      // As a supervisor stops it: SIGTERM to npm only.
      child.kill("SIGTERM");
      const code = await exited;
      // The gateway is gone with npm, not left behind serving.
      await waitUntil(async () => !(await answers(url)), 10_000, () => `the gateway still answers ${url} after npm exited: an orphan`);
      expect(code).toBe(0);
      await waitUntil(() => output.includes('"event":"stopped"'), 10_000, () => `no stopped line:\n${output}`);
      expect(output).toContain('"event":"stopped","role":"gateway","signal":"SIGTERM"');

      const lines = output.split("\n").filter((line) => line.trim() !== "");
      const notJson = lines.filter((line) => {
        try {
          return typeof (JSON.parse(line) as { event?: unknown }).event !== "string";
        } catch {
          return true;
        }
      });
      expect(notJson).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  }, 90_000);

  it("a SIGKILL to npm, which it cannot pass on: the gateway notices its parent is gone and stops gracefully", async () => {
    const port = await freePort();
    const config = join(mkdtempSync(join(tmpdir(), "gw-npm-start-")), "config.yaml");
    writeFileSync(config, `services:\n  - type: echo\n    model: echo\n    operations:\n      run: ["/v1/echo"]\n    inference_url: "http://127.0.0.1:9"\n`);
    // Without the caller's npm variables: what npm start sets is under test.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|INIT_CWD$|CONFIG_PATH$|GATEWAY_ADDR$|PORT$)/.test(name)));
    // Its own process group, so the test can clean up whatever is left.
    const child = spawn(npm, ["start", "--silent", "--", "--config", config, "--port", String(port)], {
      cwd: repoRoot,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    // The pipes close once the gateway, which holds them too, has exited.
    let closed = false;
    child.once("close", () => (closed = true));
    const url = `http://127.0.0.1:${port}/health`;
    try {
      await waitUntil(
        async () => {
          if (closed) throw new Error(`npm start exited:\n${output}`);
          return await answers(url);
        },
        60_000,
        () => `npm start: no /health on ${port}:\n${output}`,
      );
      child.kill("SIGKILL");
      await waitUntil(async () => !(await answers(url)), 10_000, () => `the gateway still answers ${url} after npm was killed: an orphan\n${output}`);
      await waitUntil(() => closed, 10_000, () => `the gateway process is still running after npm was killed:\n${output}`);
      expect(output).toContain('"event":"parent_gone","role":"gateway"');
      expect(output).toContain('"event":"stopped","role":"gateway","reason":"parent_gone"');
    } finally {
      if (!closed && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }
  }, 90_000);

  it("says on stderr, in one line, that it compiles when there is something to compile, also with --silent; nothing when up to date", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-npm-compile-"));
    const source = join(dir, "main.ts");
    const project = join(dir, "tsconfig.json");
    writeFileSync(source, "export const answer: number = 42;\n");
    // The smallest standard library (lib es5): the default adds the DOM's, which takes tsc seconds to check.
    const compilerOptions = { outDir: "out", incremental: true, tsBuildInfoFile: "out/.tsbuildinfo", strict: true, types: [], lib: ["es5"] };
    writeFileSync(project, JSON.stringify({ compilerOptions, files: ["main.ts"] }));

    const first = await prestart(project);
    expect(first).toEqual({
      code: 0,
      stdout: "",
      stderr: `inference-gateway: compiling the TypeScript sources (${project}), about half a minute on a fresh clone...\n`,
    });
    expect(existsSync(join(dir, "out/main.js"))).toBe(true);

    expect(await prestart(project)).toEqual({ code: 0, stdout: "", stderr: "" });

    // A type error: tsc's diagnostic, and a failing status, so npm start does not go on to start.
    writeFileSync(source, 'export const answer: number = "42";\n');
    const broken = await prestart(project);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr.split("\n").filter((line) => line.includes("compiling"))).toHaveLength(1);
    expect(broken.stdout).toContain("error TS2322: Type 'string' is not assignable to type 'number'.");
  }, 60_000);
});
