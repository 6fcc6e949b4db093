/**
 * Starts the real store servers the suite runs against: `redis-server` and the
 * S3-protocol server `s3rver`, each on a free loopback port, in a temporary
 * directory. Used by the vitest global setup and by e2e / reliability tests that
 * need to stop and restart a store.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Ports this process handed out already: two calls never return the same one. */
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (;;) {
    const port = await anyFreePort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls until something accepts TCP connections on the port, or throws at the deadline. */
export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listening on 127.0.0.1:${port} after ${timeoutMs} ms`);
}

/**
 * Spawns a server and resolves once it accepts connections on `port`. When the process exits
 * first (a port taken between `freePort` and the bind, a bad flag) it rejects at once with the
 * server's own last output, rather than after the port deadline with nothing to go on.
 * `readyLine`, when the server prints one once it listens: also wait for it. The port alone can
 * be open because another test's process took it after `freePort` (a Redis test once talked to a
 * gateway's HTTP port: its own redis-server had exited, unable to bind).
 */
export async function spawnListening(
  command: string,
  args: string[],
  port: number,
  options: { cwd?: string; timeoutMs?: number; readyLine?: string } = {},
): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-2000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<never>((_, reject) => {
    child.once(
      "exit",
      (code, signal) => reject(new Error(`${command} exited (${signal ?? code}) before listening on ${port}: ${output.trim() || "(no output)"}`)),
    );
  });
  exited.catch(() => {});
  try {
    const ready = async () => {
      await waitForPort(port, options.timeoutMs);
      if (options.readyLine !== undefined) {
        const line = options.readyLine;
        await waitUntilTrue(
          () => output.includes(line),
          options.timeoutMs ?? 15_000,
          () => `${command} listens on ${port} but never said "${line}": ${output.trim()}`,
        );
      }
    };
    await Promise.race([ready(), exited]);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return child;
}

async function waitUntilTrue(check: () => boolean, timeoutMs: number, message: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(message());
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Runs `start` up to `attempts` times: each try picks fresh ports, so a port race costs one retry. */
export async function withRetries<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await start();
    } catch (error) {
      last = error;
    }
  }
  throw last;
}

export interface RunningServer {
  port: number;
  url: string;
  /** The server's process, for tests that freeze it (SIGSTOP / SIGCONT). */
  pid: number | undefined;
  stop(): Promise<void>;
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 3000).unref?.();
  });
}

export function redisServerInstalled(): boolean {
  return spawnSync("redis-server", ["--version"]).status === 0;
}

/**
 * A fresh redis-server that keeps nothing on disk. Test files that share the suite's server
 * keep their keys apart in a database of their own (`const DB = N`, each N used by one file;
 * 32 databases, not Redis's default 16, so every such file has one).
 */
export async function startRedis(port?: number): Promise<RunningServer> {
  if (!redisServerInstalled()) {
    throw new Error("redis-server is not installed; the test suite needs it: apt-get install redis-server");
  }
  if (port === undefined) return await withRetries(async () => await startRedis(await freePort()));
  const chosen = port;
  const dir = mkdtempSync(join(tmpdir(), "gw-redis-"));
  let child: ChildProcess;
  try {
    child = await spawnListening(
      "redis-server",
      ["--port", String(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--databases", "32", "--dir", dir],
      chosen,
      { readyLine: "Ready to accept connections" },
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    pid: child.pid,
    async stop() {
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const TEST_BUCKET = "gateway-test";

/** A fresh s3rver (run by Node whatever runtime the tests use) with the test bucket created. */
export async function startS3(port?: number): Promise<RunningServer> {
  if (port === undefined) return await withRetries(async () => await startS3(await freePort()));
  const chosen = port;
  const dir = mkdtempSync(join(tmpdir(), "gw-s3-"));
  const bin = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../node_modules/s3rver/bin/s3rver.js");
  // s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 only
  // offers through the legacy provider: without it every second page is an InternalError.
  let child: ChildProcess;
  try {
    child = await spawnListening(
      "node",
      [
        "--openssl-legacy-provider",
        bin,
        "-d",
        dir,
        "-a",
        "127.0.0.1",
        "-p",
        String(chosen),
        "--silent",
        "--no-vhost-buckets",
        "--configure-bucket",
        TEST_BUCKET,
      ],
      chosen,
    );
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port: chosen,
    url: `http://127.0.0.1:${chosen}`,
    pid: child.pid,
    async stop() {
      await stopProcess(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
