/**
 * The `inference-gateway` command line, as a user runs it: Node runs the built bin
 * (dist/adapters/node/cli.js), Deno `deno run adapters/deno/cli.ts`. Help, version, a usage
 * mistake, `check` on a good and a bad file, and a start with --config / --port whose every
 * output line is one of the gateway's JSON log lines (the S3 store loads the AWS SDK, which on
 * Node 20 emits a multi-line notice: it must arrive as one JSON line). And the wrappers users
 * start it with (`npx inference-gateway` on Node, `deno task start` and `npx deno task start`
 * on Deno): killing the wrapper stops the gateway, also when the wrapper does not pass the
 * signal on or cannot (SIGKILL).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { onDeno, repoRoot, waitUntil } from "../support/gateway-process.ts";
import { freePort, TEST_BUCKET } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";

function cliCommand(): string[] {
  if (onDeno) return [process.execPath, "run", "--unstable-no-legacy-abort", "--allow-all", join(repoRoot, "adapters/deno/cli.ts")];
  const built = join(repoRoot, "dist/adapters/node/cli.js");
  if (!existsSync(built)) throw new Error(`${built} is missing: run "npm run build" (npm test does it)`);
  return [process.execPath, built];
}

interface Cli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

const running: Cli[] = [];

function cli(args: string[], env: Record<string, string> = {}): Cli {
  const [bin, ...rest] = cliCommand();
  // Without CONFIG_PATH / GATEWAY_ADDR / PORT from the caller's shell: the flags are under test.
  const { CONFIG_PATH: _c, GATEWAY_ADDR: _g, PORT: _p, RELAY_METRICS_ADDR: _r, ...base } = process.env;
  const child = spawn(bin, [...rest, ...args], { cwd: tmpdir(), env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  const proc = { child, stdout: () => out, stderr: () => err, exited };
  running.push(proc);
  return proc;
}

afterEach(async () => {
  for (const proc of running.splice(0)) {
    if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGTERM");
    await proc.exited;
  }
});

/**
 * `start(port)` on a free port, until the process logs that it listens there (`event`, with the
 * port): a port can be taken by another process between `freePort` and the bind (the Node suite
 * and the Deno subset run at once, each with its own record of the ports it handed out), and
 * whatever answers on it then is not this process (a fake backend answered /health and
 * /v1/models so once). A process that stops because its port is in use is started again on
 * another one, up to three ports.
 */
async function onFreePort<T>(start: (port: number) => T, seen: (started: T) => Seen, event = "listening"): Promise<{ started: T; port: number }> {
  for (let attempt = 1;; attempt++) {
    const port = await freePort();
    const started = start(port);
    const { output, ended } = seen(started);
    let taken = false;
    await waitUntil(
      () => {
        if (output().includes(`"event":"${event}"`) && output().includes(`"port":${port},`)) return true;
        if (!ended()) return false;
        taken = output().includes("already in use");
        if (taken && attempt < 3) return true;
        throw new Error(`ended before listening on ${port}:\n${output()}`);
      },
      30_000,
      () => `no ${event} on ${port}:\n${output()}`,
    );
    if (!taken) return { started, port };
  }
}

/** What `onFreePort` watches of a started process: what it printed, and whether it ended. */
interface Seen {
  output(): string;
  ended(): boolean;
}

const seenCli = (proc: Cli): Seen => ({ output: () => proc.stdout() + proc.stderr(), ended: () => proc.child.exitCode !== null });

/**
 * SIGTERM, then a clean exit: code 0 on Node. Deno's child_process reports a child it sent a
 * signal to as (null, "SIGTERM") even when the child handled it and exited 0, so there the
 * `stopped` line (written just before the exit) is the evidence.
 */
async function stopped(proc: Cli): Promise<void> {
  proc.child.kill("SIGTERM");
  const code = await proc.exited;
  if (!onDeno) expect(code).toBe(0);
  expect(proc.stdout() + proc.stderr()).toContain('"event":"stopped"');
}

function configFile(yaml: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "gw-cli-")), "config.yaml");
  writeFileSync(path, yaml);
  return path;
}

const GOOD = `services:
  - type: transcription
    model: whisper-small
    operations:
      transcribe: ["/v1/audio/transcriptions"]
    inference_url: "http://127.0.0.1:9"
  - type: llm
    model: chat-small
    operations:
      chat: ["/v1/chat/completions"]
    provider: chat_completions
    inference_url: "http://127.0.0.1:9"
`;

/** Lines that are not a JSON object with time, level and event: what a start must not print. */
function nonJsonLines(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .filter((line) => {
      try {
        const parsed = JSON.parse(line) as { time?: unknown; level?: unknown; event?: unknown };
        return typeof parsed.time !== "string" || typeof parsed.level !== "string" || typeof parsed.event !== "string";
      } catch {
        return true;
      }
    });
}

describe("inference-gateway: one-shot commands", () => {
  it("--help prints the usage and exits 0", async () => {
    const proc = cli(["--help"]);
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toMatch(/^Usage:\n {2}inference-gateway \[--config FILE\] \[--port N\] \[--role gateway\|relay\]\n {2}inference-gateway check/);
    expect(proc.stderr()).toBe("");
  });

  it("--version prints the package's version", async () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
    const proc = cli(["--version"]);
    expect(await proc.exited).toBe(0);
    expect(proc.stdout()).toBe(`inference-gateway ${version}\n`);
  });

  it("an unknown flag: one line on stderr saying so, exit 2, nothing started", async () => {
    const proc = cli(["--confg", "x.yaml"]);
    expect(await proc.exited).toBe(2);
    expect(proc.stdout()).toBe("");
    expect(proc.stderr()).toBe("inference-gateway: unknown option --confg (inference-gateway --help lists the options)\n");
  });

  it("check on a valid file: exit 0, the services, the active plugins and the stores", async () => {
    const path = configFile(GOOD);
    const proc = cli(["check", "--config", path]);
    expect(await proc.exited).toBe(0);
    const out = proc.stdout();
    expect(out).toContain(`${path} (--config): valid\n`);
    expect(out).toContain("services (2):\n");
    expect(out).toContain("  transcription  model whisper-small  operations transcribe  -> http://127.0.0.1:9\n");
    expect(out).toContain("  llm  model chat-small  operations chat  provider chat_completions  -> http://127.0.0.1:9\n");
    expect(out).toMatch(/\nplugins \(\d+\): .*\bsync-proxy\b.*\bllm-proxy\b/);
    expect(out).toContain("stores: kv embedded memory (redis.addr is empty)");
    expect(proc.stderr()).toBe("");
  });

  it("check --verbose: also the plugin order, each plugin's layer and what it waits for, and the middleware", async () => {
    const path = configFile(`admin:\n  token: secret\naudit_log:\n  enabled: true\n${GOOD}`);
    const proc = cli(["check", "--verbose", "--config", path]);
    expect(await proc.exited).toBe(0);
    const out = proc.stdout();
    const order = out.slice(out.indexOf("plugin order"), out.indexOf("stores: "));
    const lines = order.split("\n");
    expect(lines[0]).toBe("plugin order (setup order; routes, middleware and stage steps are registered in it):");
    const placed = lines.slice(1).filter((line) => line.startsWith("  ")).map((line) => line.trim().split(/\s+/));
    expect(placed.slice(0, 2)).toEqual([
      ["audit-log", "audit"],
      ["admin", "admin-guard", "after", "audit-log"],
    ]);
    expect(placed.find(([name]) => name === "sync-proxy")?.[1]).toBe("catch-all");
    // It depends on the sync proxy, so it comes after it whatever its layer.
    const llm = placed.find(([name]) => name === "llm-proxy") ?? [];
    expect(llm.slice(0, 3)).toEqual(["llm-proxy", "routes", "after"]);
    expect(llm).toContain("sync-proxy");
    expect(order).toContain("\nmiddleware, outermost first: audit-log, admin\n");
    // Without --verbose, the summary as before.
    const plain = cli(["check", "--config", path]);
    expect(await plain.exited).toBe(0);
    expect(plain.stdout()).not.toContain("plugin order");
  });

  it("check on a file with several mistakes: exit 1 and every problem with its path", async () => {
    const path = configFile(`server:
  addr: "nowhere"
services:
  - type: transcription
    operations:
      transcribe: ["v1/no-slash"]
    inference_url: "http://127.0.0.1:9"
  - type: llm
    max_file_size_mb: -1
`);
    const proc = cli(["check", "--config", path]);
    expect(await proc.exited).toBe(1);
    const err = proc.stderr();
    expect(err).toMatch(new RegExp(`^\\[GW_CONFIG_INVALID\\] ${path.replaceAll(/[.*+?^${}()|[\]\\/]/g, "\\$&")} \\(--config\\): \\d+ problems\n`));
    for (const key of ["server.addr:", "services[0].operations.transcribe[0]:", "services[1].max_file_size_mb:"]) {
      expect(err).toMatch(new RegExp(`\n  ${key.replaceAll(/[.[\]]/g, "\\$&")} `));
    }
    expect(proc.stdout()).toBe("");
  });

  it("check on a file asking for workers on the embedded store: exit 1, as the start would refuse it", async () => {
    const refused = cli(["check", "--config", configFile(`server:\n  workers: 2\n${GOOD}`)]);
    expect(await refused.exited).toBe(1);
    expect(refused.stderr()).toContain("[GW_WORKERS_NEED_REDIS]");
    expect(refused.stderr()).toContain("Set redis.addr");
    const onRedis = cli(["check", "--config", configFile(`server:\n  workers: 2\nredis:\n  addr: 127.0.0.1:9\n${GOOD}`)]);
    expect(await onRedis.exited).toBe(0);
    expect(onRedis.stdout()).toContain("server.workers: 2");
  });

  it("check on a file that does not exist: exit 1, naming the flag", async () => {
    const proc = cli(["check", "--config", "/nonexistent/config.yaml"]);
    expect(await proc.exited).toBe(1);
    expect(proc.stderr()).toContain("[GW_CONFIG_NOT_FOUND] --config names /nonexistent/config.yaml, which does not exist");
  });
});

describe("inference-gateway: serving", () => {
  it("--config naming a file that does not exist: one line naming the flag, exit 1", async () => {
    const proc = cli(["--config", "/nonexistent/config.yaml", "--port", String(await freePort())]);
    expect(await proc.exited).toBe(1);
    expect(proc.stderr()).toBe(
      "[GW_CONFIG_NOT_FOUND] cannot start: --config names /nonexistent/config.yaml, which does not exist; give the path of your config file (relative to the working directory)\n",
    );
  });

  it("--config and --port (before GATEWAY_ADDR): serves, and prints only JSON log lines, the AWS SDK's notice included", async () => {
    const elsewhere = await freePort();
    // S3 (the suite's s3rver) loads the AWS SDK; Redis is the suite's too.
    const path = configFile(`${GOOD}${storesYaml({ db: 13, bucket: TEST_BUCKET })}\n`);
    const { started: proc, port } = await onFreePort(
      (port) => cli(["--config", path, "--port", String(port)], { GATEWAY_ADDR: `127.0.0.1:${elsewhere}` }),
      seenCli,
    );
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok === true,
      30_000,
      () => `not healthy on --port ${port}:\n${proc.stdout()}${proc.stderr()}`,
    );
    const models = (await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(["whisper-small", "chat-small"]);
    await stopped(proc);

    const output = proc.stdout() + proc.stderr();
    expect(nonJsonLines(output)).toEqual([]);
    expect(output).toContain(`"event":"config_source","role":"gateway","path":${JSON.stringify(path)},"from":"--config"`);
    expect(output).toContain('"event":"stopped"');
    if (!onDeno && Number(process.versions.node.split(".")[0]) < 22) {
      // The notice Node would print as 8 plain lines, as one line.
      expect(output).toMatch(
        /"event":"process_warning","role":"gateway","name":"Warning","message":"NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\) versions published after/,
      );
    }
  });

  it("--role relay --port: a standalone relay whose /metrics listener takes the port", async () => {
    const path = configFile(`${GOOD}${storesYaml({ db: 13, bucket: TEST_BUCKET })}\nrelay:\n  embedded: false\n`);
    const { started: proc, port } = await onFreePort(
      (port) => cli(["--config", path, "--role", "relay", "--port", String(port)]),
      seenCli,
      "metrics_listening",
    );
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined))?.ok === true,
      30_000,
      () => `relay /metrics not up on ${port}:\n${proc.stdout()}${proc.stderr()}`,
    );
    await stopped(proc);
    expect(proc.stdout() + proc.stderr()).toContain('"event":"metrics_listening","role":"relay"');
    expect(nonJsonLines(proc.stdout() + proc.stderr())).toEqual([]);
  });
});

/**
 * A folder where `npx inference-gateway` runs this build, as in an installed package:
 * node_modules/.bin/inference-gateway is a node script (npx runs it under `sh -c`, as it runs
 * the package's bin).
 */
function npxFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), "gw-npx-"));
  const bin = join(dir, "node_modules/.bin");
  mkdirSync(bin, { recursive: true });
  const cli = pathToFileURL(join(repoRoot, "dist/adapters/node/cli.js")).href;
  writeFileSync(join(bin, "inference-gateway"), `#!/usr/bin/env node\nimport(${JSON.stringify(cli)});\n`);
  chmodSync(join(bin, "inference-gateway"), 0o755);
  return dir;
}

type WrapperCommand = (config: string, port: number) => { argv: string[]; cwd: string };

const npx = process.platform === "win32" ? "npx.cmd" : "npx";
/** Each wrapper as a user types it, and how the test starts it. */
const WRAPPERS: Record<string, WrapperCommand> = {
  "npx inference-gateway": (config, port) => ({ argv: [npx, "--no", "--", "inference-gateway", "--config", config, "--port", String(port)], cwd: npxFolder() }),
  "deno task start": (config, port) => ({ argv: [process.execPath, "task", "start", "--config", config, "--port", String(port)], cwd: repoRoot }),
  "npx deno task start": (config, port) => ({ argv: [npx, "--no", "--", "deno", "task", "start", "--config", config, "--port", String(port)], cwd: repoRoot }),
};

// Each runtime's gateway under the wrappers that start it. A wrapper that passes SIGTERM on
// (deno task) stops the gateway through the signal, the others through the parent watch.
const cases: Array<[string, "SIGTERM" | "SIGKILL", string]> = onDeno
  ? [
    ["deno task start", "SIGTERM", '"signal":"SIGTERM"'],
    ["deno task start", "SIGKILL", '"reason":"parent_gone"'],
    ["npx deno task start", "SIGTERM", '"reason":"parent_gone"'],
    ["npx deno task start", "SIGKILL", '"reason":"parent_gone"'],
  ]
  : [
    ["npx inference-gateway", "SIGTERM", '"reason":"parent_gone"'],
    ["npx inference-gateway", "SIGKILL", '"reason":"parent_gone"'],
  ];

describe("inference-gateway: stopping the wrapper the user started stops the gateway", () => {
  /** Every wrapper a case started (one per port it tried), each killed with its process group if still running. */
  const wrappers: Array<{ child: ChildProcess; output: string; closed: boolean }> = [];
  it.each(cases)("%s, %s to it: the gateway shuts down gracefully and exits", async (wrapper, signal, cause) => {
    const config = configFile(GOOD);
    // Without the caller's npm or deno task variables: the wrapper's own are under test.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|INIT_CWD$|CONFIG_PATH$|GATEWAY_ADDR$|PORT$)/.test(name)));
    const startWrapper = (port: number) => {
      const { argv, cwd } = WRAPPERS[wrapper](config, port);
      // Its own process group, so the test can clean up all of it whatever happens.
      const child = spawn(argv[0], argv.slice(1), { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
      const started = { child, output: "", closed: false };
      child.stdout?.on("data", (chunk: Buffer) => (started.output += chunk.toString()));
      child.stderr?.on("data", (chunk: Buffer) => (started.output += chunk.toString()));
      // The pipes close once every process holding them (the wrapper, its shell, the gateway) exited.
      child.once("close", () => (started.closed = true));
      wrappers.push(started);
      return started;
    };
    const { started, port } = await onFreePort(startWrapper, (started) => ({ output: () => started.output, ended: () => started.closed }));
    const { child } = started;
    const health = `http://127.0.0.1:${port}/health`;
    const answers = () => fetch(health).then((r) => r.ok, () => false);
    try {
      await waitUntil(
        async () => {
          if (started.closed) throw new Error(`${wrapper} exited:\n${started.output}`);
          return await answers();
        },
        30_000,
        () => `${wrapper}: no /health on ${port}:\n${started.output}`,
      );
      child.kill(signal);
      await waitUntil(async () => !(await answers()), 10_000, () => `the gateway still answers after ${signal} to ${wrapper}:\n${started.output}`);
      await waitUntil(() => started.closed, 10_000, () => `a process of ${wrapper} is still running after ${signal} to it:\n${started.output}`);
      expect(started.output).toContain(`"event":"stopped","role":"gateway",${cause}`);
    } finally {
      for (const one of wrappers.splice(0)) if (!one.closed && one.child.pid !== undefined) process.kill(-one.child.pid, "SIGKILL");
    }
  }, 60_000);
});
