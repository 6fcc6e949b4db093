/**
 * deploy/systemd/inference-gateway.service checked without systemd: its ExecStart names node
 * and the compiled gateway entry point (with the flags the image uses), its stop settings send
 * the signal the gateway handles, and that command, run as the unit would run it (the install
 * directory mapped to this repository), stops cleanly on the unit's KillSignal well within
 * TimeoutStopSec.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { onDeno, repoRoot, waitUntil } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";
import { dockerfile, execForm, systemdUnit } from "./deploy-files.ts";

const unit = systemdUnit("systemd/inference-gateway.service");
const service = unit.Service;
const only = (key: string): string => {
  expect(service[key], `[Service] ${key}`).toHaveLength(1);
  return service[key][0];
};
const execStart = () => only("ExecStart").split(/\s+/);
const installDir = () => only("WorkingDirectory");

describe("deploy/systemd/inference-gateway.service", () => {
  it("runs node itself on the compiled gateway entry point, with the image's flags", () => {
    const [bin, ...args] = execStart();
    // systemd wants an absolute path; node is the main process, no npm in between.
    expect(bin).toBe("/usr/bin/node");
    expect(args.at(-1)).toBe(`${installDir()}/dist/adapters/node/cli.js`);
    const cmd = execForm(dockerfile().filter((i) => i.keyword === "CMD").at(-1)!.args)!;
    expect(args.slice(0, -1)).toEqual(cmd.slice(1, -1));
    expect(service.Environment).toContain("CONFIG_PATH=/etc/inference-gateway/config.yaml");
    expect(unit.Install.WantedBy).toEqual(["multi-user.target"]);
  });

  it("stops with SIGTERM, to the node process, with time to finish in-flight requests", () => {
    expect(only("KillSignal")).toBe("SIGTERM");
    // "none" or "process"-only would leave no SIGKILL fallback for the whole group.
    expect(["mixed", "control-group"]).toContain(only("KillMode"));
    expect(Number.parseInt(only("TimeoutStopSec"), 10)).toBeGreaterThanOrEqual(30);
    expect(only("User")).not.toBe("root");
  });

  it.skipIf(onDeno)("its ExecStart, run as the unit runs it, serves and exits 0 on the KillSignal", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "gw-systemd-"));
    const configPath = join(dir, "config.yaml");
    writeFileSync(configPath, "services: []\n");
    const [, ...args] = execStart();
    const child = spawn(process.execPath, args.map((a) => a.replace(installDir(), repoRoot)), {
      cwd: repoRoot,
      env: { ...process.env, CONFIG_PATH: configPath, GATEWAY_ADDR: `127.0.0.1:${port}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok === true, 30_000, () => output);
      const signalled = Date.now();
      child.kill(only("KillSignal") as NodeJS.Signals);
      expect(await exited).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(Number.parseInt(only("TimeoutStopSec"), 10) * 1000);
      expect(output).toContain('"event":"stopped"');
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
  });
});
