/**
 * The closed-loop generator: wrk (C, epoll, one thread) with bench/load/wrk.lua checking
 * every answer. Chosen over autocannon because it costs a fraction of the CPU per request
 * on the core it shares with the mock backend, so the direct baseline is not capped by the
 * generator itself. `npm run bench` falls back to autocannon when wrk is not installed.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { OTHER_CORE, pinned } from "../procs.ts";
import type { ClosedLoopResult, RequestSpec } from "./spec.ts";

export function wrkInstalled(): boolean {
  return spawnSync("wrk", ["--version"]).error === undefined;
}

/** The Lua script ships next to the sources; the compiled runner finds it from the repo root. */
function scriptPath(repoRoot: string): string {
  return resolve(repoRoot, "bench/load/wrk.lua");
}

export async function runWrk(spec: RequestSpec, connections: number, seconds: number, repoRoot: string): Promise<ClosedLoopResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-wrk-"));
  try {
    writeFileSync(join(dir, "body"), spec.body);
    if (spec.expect.body !== undefined) writeFileSync(join(dir, "expect"), spec.expect.body);
    writeFileSync(join(dir, "headers"), Object.entries(spec.headers).map(([name, value]) => `${name}: ${value}`).join("\n"));
    writeFileSync(
      join(dir, "settings"),
      [
        spec.method,
        String(spec.expect.status),
        spec.uniqueMarker ?? "-",
        String(spec.consumers ?? 0),
        spec.expect.contains ?? "-",
        spec.randomConsumers ? "random" : "rotate",
        spec.models?.marker ?? "-",
        spec.models?.base ?? "-",
        String(spec.models?.count ?? 0),
      ].join("\n"),
    );
    const argv = pinned(OTHER_CORE, ["wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", scriptPath(repoRoot), spec.url]);
    const output = await new Promise<string>((done, fail) => {
      const child = spawn(argv[0], argv.slice(1), { env: { ...process.env, BENCH_WRK_DIR: dir }, stdio: ["ignore", "pipe", "pipe"] });
      let text = "";
      child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
      child.on("error", fail);
      child.on("exit", (code) => (code === 0 ? done(text) : fail(new Error(`wrk exited with ${code}:\n${text}`))));
    });
    const line = /BENCH_JSON (\{.*\})/.exec(output);
    if (!line) throw new Error(`wrk printed no result:\n${output}`);
    const raw = JSON.parse(line[1]) as {
      requests: number;
      duration_us: number;
      p50_us: number;
      p99_us: number;
      transport_errors: number;
      wrong_status: number;
      invalid: number;
    };
    return {
      requests: raw.requests,
      seconds: raw.duration_us / 1e6,
      p50Ms: raw.p50_us / 1000,
      p99Ms: raw.p99_us / 1000,
      errors: raw.transport_errors + raw.wrong_status,
      invalid: raw.invalid,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
