/**
 * Starts the real gateway (or relay) process for e2e tests: Node runs the compiled
 * output (`npm test` builds it first); under Deno the same source runs with `deno run`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { isMap, parseDocument } from "yaml";
import { freePort } from "./servers.ts";

/**
 * Test gateways wait up to 3 s for a Redis reply unless their config sets
 * `redis.command_timeout` (default 500 ms). The suite's one redis-server serves every test file
 * at once on a 2-core CI machine, and now and then it answers one command late: at 500 ms that
 * refused a job submission (503) in tests about webhooks, replicas or jobs, not about Redis's
 * latency. The tests of the bound itself set it (reliability scenario 9, the store's tests).
 */
const TEST_REDIS_COMMAND_TIMEOUT = "3s";

function withTestRedisBound(text: string): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) return text;
  const redis = doc.get("redis");
  if (!isMap(redis) || redis.has("command_timeout")) return text;
  redis.set("command_timeout", TEST_REDIS_COMMAND_TIMEOUT);
  return doc.toString({ lineWidth: 0 });
}

export const repoRoot = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
export const onDeno = typeof (globalThis as { Deno?: unknown }).Deno === "object";
/**
 * True in `deno task test` (vitest.deno.config.ts sets the variable), which runs on Deno what
 * the runtime can change: a test of the gateway's own logic in a file of that subset skips
 * itself there (`it.skipIf(inDenoSubset)`), and still runs on Deno with `deno task test:all`.
 */
export const inDenoSubset = onDeno && process.env.GATEWAY_TEST_DENO_SUBSET === "1";

export interface GatewayProcess {
  url: string;
  port: number;
  configPath: string;
  child: ChildProcess;
  /** Everything the process wrote so far (stdout + stderr). */
  output(): string;
  /** Rewrites the config file (for reload tests). */
  writeConfig(yaml: string): void;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

export interface StartOptions {
  role?: "gateway" | "relay";
  env?: Record<string, string>;
  /** Do not wait for /health (for processes expected to fail at start). */
  noWait?: boolean;
}

/** The `inference-gateway` CLI, as `npm start` / `deno task start` run it (`--role relay` for a relay). */
function command(role: "gateway" | "relay"): string[] {
  const roleArgs = role === "relay" ? ["--role", "relay"] : [];
  // As `deno task start` runs it: a request's signal aborts only when the client goes away.
  if (onDeno) return [process.execPath, "run", "--unstable-no-legacy-abort", "--allow-all", join(repoRoot, "adapters/deno/cli.ts"), ...roleArgs];
  const built = join(repoRoot, "dist/adapters/node/cli.js");
  if (!existsSync(built)) throw new Error(`${built} is missing: run "npm run build" (npm test does it)`);
  return [process.execPath, built, ...roleArgs];
}

/**
 * The gateway and relay processes started in this worker that have not exited yet. A test that
 * times out while a start is still waiting for /health never gets the process to stop it, so
 * test/support/stop-leftovers.ts stops whatever a test file left here when the file ends.
 */
export const liveProcesses: Set<ChildProcess> = new Set();

/** The process could not bind the port the test chose: another process took it since `freePort`. */
class PortTaken extends Error {}

/**
 * Writes `yaml` (with `{{PORT}}` replaced by a free port) and starts the process. A free port
 * can be taken by another test's process between `freePort` and the gateway's bind (the suite
 * runs several files at once): a gateway that stops at start because its own port is in use is
 * started again on another one.
 */
export async function startGateway(yaml: string, options: StartOptions = {}): Promise<GatewayProcess> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startOnce(yaml, options);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt === 3) throw error;
    }
  }
}

async function startOnce(yaml: string, options: StartOptions): Promise<GatewayProcess> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "gw-e2e-"));
  const configPath = join(dir, "config.yaml");
  const render = (text: string) => withTestRedisBound(text.replaceAll("{{PORT}}", String(port)));
  writeFileSync(configPath, render(yaml));
  const [bin, ...args] = command(options.role ?? "gateway");
  const child = spawn(bin, args, {
    cwd: repoRoot,
    env: { ...process.env, CONFIG_PATH: configPath, GATEWAY_ADDR: `127.0.0.1:${port}`, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  liveProcesses.add(child);
  child.once("exit", () => liveProcesses.delete(child));
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const proc: GatewayProcess = {
    url: `http://127.0.0.1:${port}`,
    port,
    configPath,
    child,
    output: () => output,
    writeConfig: (text) => writeFileSync(configPath, render(text)),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return await exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
  if (!options.noWait && (options.role ?? "gateway") === "gateway") {
    const ownPort = options.env?.GATEWAY_ADDR === undefined && options.env?.PORT === undefined;
    await waitUntil(
      async () => {
        if (child.exitCode !== null) {
          const message = `gateway exited with ${child.exitCode}:\n${output}`;
          throw ownPort && output.includes(`127.0.0.1:${port}`) && output.includes("already in use") ? new PortTaken(message) : new Error(message);
        }
        try {
          return (await fetch(`${proc.url}/health`)).ok;
        } catch {
          return false;
        }
      },
      30_000,
      () => `gateway did not answer /health:\n${output}`,
    );
  }
  return proc;
}

/** Polls `check` until it returns true, or throws at the deadline. */
export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, message?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(message?.() ?? `condition not met within ${timeoutMs} ms`);
}

/** Resolves with the exit code once the process exits (or throws at the deadline). */
export async function exitCode(proc: GatewayProcess, timeoutMs = 30_000): Promise<number | null> {
  await waitUntil(() => proc.child.exitCode !== null, timeoutMs, () => `process did not exit:\n${proc.output()}`);
  return proc.child.exitCode;
}
