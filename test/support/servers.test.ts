/**
 * The test servers' start-up: a server that cannot listen fails the start at once with its own
 * words (CI once waited 15 s on a cluster node and learned only "nothing listening").
 */
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { freePort, spawnListening, startRedis } from "./servers.ts";

describe("spawnListening", () => {
  // The port deadline is ten minutes and the test's own limit 20 s: only the exit can end it in time.
  it("rejects as soon as the server exits, with the server's output", { timeout: 20_000 }, async () => {
    const port = await freePort();
    await expect(spawnListening("redis-server", ["--port", String(port), "--no-such-flag", "x"], port, { timeoutMs: 600_000 })).rejects.toThrow(
      /redis-server exited \(1\) before listening on \d+: .*no-such-flag/s,
    );
  });

  it("resolves once the server listens", async () => {
    const port = await freePort();
    const child = await spawnListening("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", ""], port);
    expect(child.exitCode).toBeNull();
    child.kill("SIGKILL");
  });

  it("does not take another process listening on the port for the server", { timeout: 20_000 }, async () => {
    const port = await freePort();
    // Another process's server: it accepts connections (the port check's, which hangs up at once).
    const other = createServer((socket) => {
      socket.on("error", () => {});
      socket.end();
    });
    await new Promise<void>((resolve) => other.listen(port, "127.0.0.1", resolve));
    try {
      await expect(startRedis(port)).rejects.toThrow(/redis-server exited \(1\) before listening on \d+/);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it("hands out a port once per process", async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    expect(new Set(ports).size).toBe(40);
  });
});
