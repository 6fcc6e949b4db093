/** Runs bench/load/autocannon-runner in its own process on the non-server core. */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { OTHER_CORE, pinned } from "../procs.ts";
import type { RunnerInput } from "./autocannon-runner.ts";
import type { ClosedLoopResult, RequestSpec } from "./spec.ts";

const runner = fileURLToPath(new URL("./autocannon-runner.js", import.meta.url));

export async function runAutocannon(spec: RequestSpec, connections: number, seconds: number): Promise<ClosedLoopResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-ac-"));
  try {
    const bodyFile = join(dir, "body");
    writeFileSync(bodyFile, spec.body);
    const { body: _body, ...rest } = spec;
    const input: RunnerInput = { spec: { ...rest, bodyFile }, connections, seconds };
    writeFileSync(join(dir, "input.json"), JSON.stringify(input));
    const argv = pinned(OTHER_CORE, [process.execPath, runner, join(dir, "input.json")]);
    const output = await new Promise<string>((done, fail) => {
      const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
      let text = "";
      child.stdout.on("data", (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (text += chunk.toString()));
      child.on("error", fail);
      child.on("exit", (code) => (code === 0 ? done(text) : fail(new Error(`autocannon exited with ${code}:\n${text}`))));
    });
    const line = /BENCH_JSON (\{.*\})/.exec(output);
    if (!line) throw new Error(`autocannon printed no result:\n${output}`);
    return JSON.parse(line[1]) as ClosedLoopResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
