/**
 * The installable package, as a user gets it: `npm pack` of the built repository, the tarball
 * installed into an empty folder (dependencies from npm's cache, `--prefer-offline`; the
 * registry only for what the cache lacks), then `npx inference-gateway --config config.yaml`
 * with no TypeScript toolchain installed. It must serve /health, a configured route and the API
 * docs' assets (from the swagger-ui-dist dependency), printing only JSON log lines, and stop
 * when npx is stopped; a TypeScript plugin, without tsx installed, is refused with the command
 * that installs it. Node only: the bin is Node's (Deno runs adapters/deno/cli.ts from the same package, see docs/deno.md).
 */
import { execFile, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { onDeno, repoRoot, waitUntil } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";

const run = promisify(execFile);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const dir = mkdtempSync(join(tmpdir(), "gw-package-"));

// Retried: an install cut short by a timeout may still be writing into the folder.
afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));

describe.skipIf(onDeno)("the npm package", () => {
  it("installs from its tarball into an empty folder and npx inference-gateway serves", async () => {
    const cli = join(repoRoot, "dist/adapters/node/cli.js");
    if (!existsSync(cli)) throw new Error(`${cli} is missing: run "npm run build" (npm test does it)`);
    // --ignore-scripts: the build is the suite's (prepack would run the same tsc -b).
    const packed = join(dir, "packed");
    mkdirSync(packed);
    await run(npm, ["pack", "--ignore-scripts", "--silent", "--pack-destination", packed], { cwd: repoRoot });
    const [tarball] = readdirSync(packed).filter((name) => name.endsWith(".tgz"));
    expect(tarball).toMatch(/^inference-gateway-\d+\.\d+\.\d+\.tgz$/);

    const app = join(dir, "app");
    mkdirSync(app);
    await run(npm, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", join(packed, tarball)], { cwd: app, timeout: 240_000 });
    const installed = join(app, "node_modules/inference-gateway");
    // Compiled JavaScript and the example config; no TypeScript toolchain, no tests.
    expect(existsSync(join(installed, "dist/adapters/node/cli.js"))).toBe(true);
    expect(existsSync(join(installed, "config.example.yaml"))).toBe(true);
    expect(existsSync(join(installed, "test"))).toBe(false);
    expect(existsSync(join(installed, "bench"))).toBe(false);
    expect(["typescript", "tsx"].filter((name) => existsSync(join(app, "node_modules", name)))).toEqual([]);

    // tsx is an optional peer: a TypeScript plugin without it is refused with what to install.
    writeFileSync(join(app, "hello.mts"), 'export default { name: "hello", setup(): void {} };\n');
    writeFileSync(join(app, "with-ts-plugin.yaml"), "plugins:\n  load: [./hello.mts]\nservices: []\n");
    const refused = await run("npx", ["inference-gateway", "check", "--config", "with-ts-plugin.yaml"], { cwd: app }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'plugins.load[0]: cannot import "./hello.mts": loading a TypeScript plugin on Node needs tsx, which is not installed: run "npm install tsx" next to the gateway',
    );

    copyFileSync(join(installed, "config.example.yaml"), join(app, "config.yaml"));
    const port = await freePort();
    const { CONFIG_PATH: _c, GATEWAY_ADDR: _g, PORT: _p, ...env } = process.env;
    // Its own process group: npx runs the bin under a shell, and a failed test stops them all.
    const child = spawn("npx", ["inference-gateway", "--config", "config.yaml", "--port", String(port)], {
      cwd: app,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitUntil(
        async () => {
          if (child.exitCode !== null) throw new Error(`npx inference-gateway exited with ${child.exitCode}:\n${output}`);
          return await fetch(`${base}/health`).then((r) => r.ok, () => false);
        },
        30_000,
        () => `no /health on ${port}:\n${output}`,
      );
      const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((m) => m.id)).toContain("whisper-small");
      const css = await fetch(`${base}/docs/assets/swagger-ui.css`);
      expect(css.status).toBe(200);
      expect((await css.text()).length).toBeGreaterThan(10_000);
      // Stopping npx alone stops the gateway: npx's shell does not pass the SIGTERM on, so the
      // gateway notices its parent is gone.
      child.kill("SIGTERM");
      await waitUntil(
        async () => !(await fetch(`${base}/health`).then((r) => r.ok, () => false)),
        10_000,
        () => `the gateway still answers after npx was stopped:\n${output}`,
      );
      await waitUntil(() => output.includes('"event":"stopped","role":"gateway","reason":"parent_gone"'), 10_000, () => `did not stop:\n${output}`);
    } finally {
      if (child.pid !== undefined && !output.includes('"event":"stopped"')) process.kill(-child.pid, "SIGKILL");
    }
    expect(output).toContain(`"event":"config_source","role":"gateway","path":"config.yaml","from":"--config"`);
    const notJson = output.split("\n").filter((line) => line.trim() !== "" && !isJsonObject(line));
    expect(notJson).toEqual([]);
  }, 300_000); // the provider SDKs (AWS credential chain, Google auth) make the install a few hundred packages
});

function isJsonObject(line: string): boolean {
  try {
    return typeof JSON.parse(line) === "object";
  } catch {
    return false;
  }
}
