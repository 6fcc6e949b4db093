/**
 * `redis.command_timeout` measures Redis, not the gateway's own event loop: a reply that came
 * while the process was busy past the bound (a long synchronous task, a loaded CPU) is the
 * command's answer, not a timeout. The event loop runs due timers before it reads sockets,
 * so the bound has to look once more (CI: a freshly started gateway answered a job
 * submission 503 "did not answer EVALSHA within 500 ms" on a loaded machine).
 */
import { setImmediate } from "node:timers";
import { afterAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";

const opened: RedisKv[] = [];
afterAll(async () => {
  await Promise.all(opened.map((kv) => kv.close()));
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
    const kv = await RedisKv.connect({ url: inject("redisUrl"), commandTimeoutMs: 100 });
    opened.push(kv);
    for (let round = 0; round < 5; round++) {
      const key = `busy:${crypto.randomUUID()}`;
      await kv.set(key, String(round), 60_000);
      const reply = kv.get(key);
      // node-redis writes in the check phase (setImmediate), scheduled a few promise turns into
      // the call: let those turns pass, then resume right after its write, in the same phase,
      // so the reply can only be read once the busy stretch is over.
      for (let turn = 0; turn < 20; turn++) await Promise.resolve();
      await new Promise((resolve) => setImmediate(resolve));
      busyFor(300);
      await expect(reply).resolves.toBe(String(round));
    }
    // And nothing is refused afterwards.
    await expect(kv.get(`busy:${crypto.randomUUID()}`)).resolves.toBeNull();
  });
});
