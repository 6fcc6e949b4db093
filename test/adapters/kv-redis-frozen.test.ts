/**
 * RedisKv against a Redis that stops answering without closing the connection (SIGSTOP,
 * as a network black hole would look): every command is bounded by `commandTimeoutMs`,
 * later commands are refused at once while Redis stays silent, a late reply is never handed
 * to another command, and a connection silent for too long is replaced. Each test runs
 * its own redis-server, never the suite's shared one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

const started: RunningServer[] = [];
const opened: RedisKv[] = [];
const frozen = new Set<number>();

afterEach(async () => {
  for (const pid of frozen) process.kill(pid, "SIGCONT");
  frozen.clear();
  await Promise.all(opened.splice(0).map((kv) => kv.close()));
  await Promise.all(started.splice(0).map((server) => server.stop()));
});

function freeze(server: RunningServer): void {
  process.kill(server.pid!, "SIGSTOP");
  frozen.add(server.pid!);
}

function thaw(server: RunningServer): void {
  process.kill(server.pid!, "SIGCONT");
  frozen.delete(server.pid!);
}

async function pollUntil(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

describe("RedisKv with a frozen Redis", () => {
  it("fails a command within its bound, refuses the next ones at once, and matches every late reply to its own command", async () => {
    const server = await startRedis();
    started.push(server);
    const kv = await RedisKv.connect({ url: server.url, commandTimeoutMs: 200 });
    opened.push(kv);
    await kv.set("a", "A");
    await kv.set("b", "B");

    freeze(server);
    const waited = Date.now();
    await expect(kv.get("a")).rejects.toThrow(/did not answer GET within 200 ms \(redis\.command_timeout\)/);
    // Loose: the point is "bounded", not a precise figure on a shared machine.
    expect(Date.now() - waited).toBeLessThan(3_000);
    const refused = Date.now();
    await expect(kv.get("b")).rejects.toThrow(/is not answering .*GET not sent/);
    await expect(kv.ping()).rejects.toThrow(/is not answering .*PING not sent/);
    await expect(kv.incrBy("n", 1)).rejects.toThrow(/INCRBY not sent/);
    expect(Date.now() - refused).toBeLessThan(150);

    thaw(server);
    // The late reply to GET a ("A") is consumed by that abandoned command, not by GET b.
    await pollUntil(async () => (await kv.get("b")) === "B");
    expect(await kv.get("a")).toBe("A");
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    await Promise.all(keys.map((key) => kv.set(key, `value of ${key}`)));
    expect(await Promise.all(keys.map((key) => kv.get(key)))).toEqual(keys.map((key) => `value of ${key}`));
    // Refused commands were never sent: the counter was not touched while Redis was frozen.
    expect(await kv.get("n")).toBeNull();
  });

  it("drops a connection that stays silent and reconnects on its own once Redis answers again", async () => {
    const server = await startRedis();
    started.push(server);
    const errors: Error[] = [];
    const kv = await RedisKv.connect({ url: server.url, commandTimeoutMs: 200, maxReconnectDelayMs: 200, onError: (error) => errors.push(error) });
    opened.push(kv);
    await kv.set("a", "A");

    freeze(server);
    await expect(kv.get("a")).rejects.toThrow(/did not answer/);
    // Past the silence bound (3 s here) the socket is closed (node-redis reports the timeout) and reopened.
    await pollUntil(async () => errors.some((error) => /Expecting data/.test(error.message)), 15_000);
    thaw(server);
    await pollUntil(async () => (await kv.get("a")) === "A");
    await kv.ping();
  });
});
