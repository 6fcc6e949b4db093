/**
 * Starts the real store servers the suite runs against: `redis-server` and the
 * S3-protocol server `s3rver`, each on a free loopback port, in a temporary
 * directory. Used by the vitest global setup and by e2e / reliability tests that
 * need to stop and restart a store.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
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
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "gw-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(chosen), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--databases", "32", "--dir", dir],
    { stdio: "ignore" },
  );
  await waitForPort(chosen);
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
  const chosen = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "gw-s3-"));
  const bin = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../node_modules/s3rver/bin/s3rver.js");
  // s3rver encrypts ListObjectsV2 continuation tokens with DES, which OpenSSL 3 only
  // offers through the legacy provider: without it every second page is an InternalError.
  const child = spawn(
    "node",
    ["--openssl-legacy-provider", bin, "-d", dir, "-a", "127.0.0.1", "-p", String(chosen), "--silent", "--no-vhost-buckets", "--configure-bucket", TEST_BUCKET],
    { stdio: "ignore" },
  );
  await waitForPort(chosen);
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
