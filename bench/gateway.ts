/**
 * The processes `npm run bench` and `npm run soak` both start: the gateway (Node from
 * dist/, or Deno from the source) pinned to the server core, a private redis-server on the
 * other core, and the description of the machine the figures come from.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, waitForPort } from "../test/support/servers.ts";
import type { Target } from "./measure.ts";
import { hasTaskset, listeningPort, OTHER_CORE, SERVER_CORE, type Service, spawnService, waitHealthy } from "./procs.ts";
import type { Machine } from "./report.ts";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const resultsDir = join(repoRoot, "bench/results");
export const denoBinary = join(repoRoot, "node_modules/deno/deno");

export type Runtime = "node" | "deno";

export function machine(): Machine {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const deno = spawnSync(denoBinary, ["--version"], { encoding: "utf8" });
  return {
    nproc: cpus().length,
    cpu: cpuinfo.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "unknown",
    node: process.version,
    deno: deno.status === 0 ? deno.stdout.split("\n")[0] : undefined,
    os: readFileSync("/etc/os-release", "utf8").match(/^PRETTY_NAME="?(.*?)"?$/m)?.[1] ?? process.platform,
    pinned: hasTaskset(),
  };
}

export function redisInstalled(): boolean {
  return spawnSync("redis-server", ["--version"]).status === 0;
}

/** A redis-server that keeps nothing on disk, on the core the gateway does not use. */
export async function startRedis(workDir: string): Promise<{ service: Service; addr: string; port: number }> {
  const port = await freePort();
  const service = spawnService("redis", ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", workDir], {
    core: OTHER_CORE,
  });
  await waitForPort(port);
  return { service, addr: `127.0.0.1:${port}`, port };
}

/**
 * What a one-off bench tool runs beside the gateway, on the core the gateway does not use: the
 * mock backend (its stream's events `chunkDelayMs` apart when set), and Redis for `prod-redis`.
 * Each is pushed on `services` as it starts (stopped by the caller).
 */
export async function startSideServices(
  workDir: string,
  config: string,
  services: Service[],
  chunkDelayMs?: number,
): Promise<{ mockUrl: string; redisAddr: string }> {
  const delay = chunkDelayMs ? ["--chunk-delay-ms", String(chunkDelayMs)] : [];
  const mock = spawnService("mock backend", [process.execPath, join(repoRoot, "dist/bench/mock-backend.js"), "0", ...delay], { core: OTHER_CORE });
  services.push(mock);
  const mockUrl = `http://127.0.0.1:${await listeningPort(mock)}`;
  if (config !== "prod-redis") return { mockUrl, redisAddr: "" };
  if (!redisInstalled()) throw new Error("--config prod-redis needs redis-server");
  const redis = await startRedis(workDir);
  services.push(redis.service);
  return { mockUrl, redisAddr: redis.addr };
}

export interface GatewayOptions {
  runtime: Runtime;
  /** Names the process in logs and errors. */
  name: string;
  configPath: string;
  /** Runtime flags before the entry point (`--cpu-prof ...`, `--inspect=...`). */
  runtimeFlags?: string[];
  env?: Record<string, string>;
  /** The checkout whose build runs (default: this one), for an A/B of two builds. */
  root?: string;
  /** The cores it may run on (taskset list; default the server core). */
  core?: string;
}

export interface Gateway {
  service: Service;
  target: Target;
  port: number;
  /** The plugins it started with, from its `gateway_started` log line. */
  plugins: string[];
}

/**
 * The runtime flags of `npm start` (`deno task start`): the V8 heap settings users run the
 * gateway with (and on Deno its request-signal behaviour), so the bench measures the same
 * process (package.json and deno.json hold them).
 */
export function startFlags(runtime: Runtime): string[] {
  const command = runtime === "deno"
    ? (JSON.parse(readFileSync(join(repoRoot, "deno.json"), "utf8")) as { tasks: { start: string } }).tasks.start
    : (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;
  const words = command.split(/\s+/);
  // The bench adds its own --allow-all (Deno) and entry point.
  return runtime === "deno"
    ? words.filter((word) => word.startsWith("--") && word !== "--allow-all")
    : words.slice(words.indexOf("node") + 1).filter((word) => word.startsWith("--"));
}

/** Starts the gateway on a free port and waits for `/health`. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const port = await freePort();
  const flags = [...startFlags(options.runtime), ...(options.runtimeFlags ?? [])];
  const root = options.root ?? repoRoot;
  const argv = options.runtime === "deno"
    ? [denoBinary, "run", ...flags, "--allow-all", join(root, "adapters/deno/main.ts")]
    : [process.execPath, ...flags, join(root, "dist/adapters/node/main.js")];
  const service = spawnService(options.name, argv, {
    core: options.core ?? SERVER_CORE,
    cwd: root,
    env: { CONFIG_PATH: options.configPath, GATEWAY_ADDR: `127.0.0.1:${port}`, ...options.env },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(service, `${base}/health`);
  const started = /"event":"gateway_started".*?"plugins":(\[[^\]]*\])/.exec(service.output());
  return { service, target: { name: "gateway", base, pid: service.pid }, port, plugins: started ? (JSON.parse(started[1]) as string[]) : [] };
}
