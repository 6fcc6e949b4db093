/**
 * `redis.command_timeout` measures Redis, not the gateway's own event loop: a reply that came
 * while the process was busy past the bound (a long synchronous task, a loaded CPU) is the
 * command's answer, not a timeout. The event loop runs due timers before it reads sockets,
 * so the bound has to look once more (CI: a freshly started gateway answered a job
 * submission 503 "did not answer EVALSHA within 500 ms" on a loaded machine).
 */
import { setImmediate } from "node:timers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

// A server of its own: the test stops it (SIGSTOP) to hold a reply back.
let redis: RunningServer;
const opened: RedisKv[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(opened.map((kv) => kv.close()));
  await redis?.stop();
});

/** Keeps the process busy, as a long synchronous task would. */
function busyFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin
  }
}

describe("the reply bound of a busy process", () => {
  it("hands over a reply that arrived while the process was busy past the bound", async () => {
    const kv = await RedisKv.connect({ url: redis.url, commandTimeoutMs: 100 });
    opened.push(kv);
    for (let round = 0; round < 5; round++) {
      const key = `busy:${crypto.randomUUID()}`;
      await kv.set(key, String(round), 60_000);
      // The server is stopped while the command goes out, so its reply can only come once the
      // server is let go, and it is let go right before the busy stretch: the reply arrives while
      // the process is busy, past the bound. (Counting event-loop turns until the write had left
      // held on Node but not on Deno, whose socket writes wait for the event loop.) The busy
      // stretch runs in the check phase (setImmediate), so the due bound's timer runs before the
      // sockets are read next.
      process.kill(redis.pid!, "SIGSTOP");
      let reply: Promise<string | null>;
      try {
        reply = kv.get(key);
        await new Promise((resolve) => setTimeout(resolve, 30));
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.kill(redis.pid!, "SIGCONT");
      }
      busyFor(300);
      await expect(reply).resolves.toBe(String(round));
    }
    // And nothing is refused afterwards.
    await expect(kv.get(`busy:${crypto.randomUUID()}`)).resolves.toBeNull();
  });
});
