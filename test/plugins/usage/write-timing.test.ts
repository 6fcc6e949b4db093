/**
 * `usage.write`: when an answer ends relative to the write that counts it. `before_answer`
 * (the default): the answer's end waits for the write, so `GET /usage` right after it sees the
 * request; `after_answer`: the answer ends while the write is still held, and the count lands
 * once the write goes through. A gateway in this process, on the memory store and on the
 * suite's redis-server (database 21), whose usage writes the test can hold.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openStores } from "../../../adapters/stores.ts";
import type { GatewayConfig } from "../../../core/config/schema.ts";
import { Gateway } from "../../../core/gateway.ts";
import { type Logger, silentLogger } from "../../../core/log.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { usageRecord } from "../../../plugins/usage/ops.ts";
import { waitUntil } from "../../support/gateway-process.ts";
import { flushRedisDb, kvStoreYaml } from "../../support/stores-yaml.ts";

const DB = 21;

/** Holds the usage writes (`usageRecord`) while closed; everything else goes through. */
class WriteGate {
  private closed = false;
  private waiting: Array<() => void> = [];
  get held(): number {
    return this.waiting.length;
  }
  close(): void {
    this.closed = true;
  }
  open(): void {
    this.closed = false;
    for (const resume of this.waiting.splice(0)) resume();
  }
  wrap(kv: KvStore): KvStore {
    return new Proxy(kv, {
      get: (target, name, receiver) => {
        if (name !== "run") return Reflect.get(target, name, receiver);
        const run: KvStore["run"] = async (op, keys, args) => {
          if (op === usageRecord && this.closed) await new Promise<void>((resume) => this.waiting.push(resume));
          return await target.run(op, keys, args);
        };
        return run;
      },
    });
  }
}

const gateways: Gateway[] = [];
const gates: WriteGate[] = [];
afterEach(async () => {
  // A test that failed with its writes held must not leave the close waiting on them.
  for (const gate of gates.splice(0)) gate.open();
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
});
beforeAll(async () => {
  await flushRedisDb(DB);
});

async function start(store: "memory" | "redis", write: string | undefined, gate: WriteGate): Promise<Gateway> {
  gates.push(gate);
  const config = `
server:
  consumer_header: X-Consumer
${kvStoreYaml(store, DB)}
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "usage-write-")))}
relay:
  embedded: false
${write ? `usage:\n  write: ${write}` : ""}
services:
  - type: echo
    model: echo
    inference_url: http://backend.invalid
    operations: { run: [/v1/echo] }
`;
  const gateway = await Gateway.create({
    readConfig: async () => config,
    env: {},
    importModule: () => Promise.reject(new Error("no user plugins here")),
    openStores: async (parsed: GatewayConfig, log: Logger) => {
      const stores = await openStores(parsed, log);
      return { ...stores, kv: gate.wrap(stores.kv) };
    },
    plugins: builtinPlugins,
    log: silentLogger,
    // The backend answers at once: only the usage write decides when the answer ends.
    fetch: async () => Response.json({ ok: true }),
  });
  gateways.push(gateway);
  return gateway;
}

/** Sends one request as `consumer` and reads its whole answer; resolves with the status. */
async function echo(gateway: Gateway, consumer: string): Promise<number> {
  const response = await gateway.fetch(
    new Request("http://gateway/v1/echo", { method: "POST", headers: { "content-type": "application/json", "x-consumer": consumer }, body: "{}" }),
  );
  await response.arrayBuffer();
  return response.status;
}

async function requestsOf(gateway: Gateway, consumer: string): Promise<number> {
  const response = await gateway.fetch(new Request("http://gateway/usage", { headers: { "x-consumer": consumer } }));
  const body = (await response.json()) as { usage: Array<{ service_type: string; total: { requests: number } }> };
  return body.usage.find((u) => u.service_type === "echo")?.total.requests ?? 0;
}

describe.each(["memory", "redis"] as const)("usage.write on the %s store", (store) => {
  const consumer = (name: string) => `${name}-${store}-${Math.random().toString(36).slice(2)}`;

  it("before_answer (the default): GET /usage right after an answer counts it; the answer waits for a held write", async () => {
    const gate = new WriteGate();
    const gateway = await start(store, undefined, gate);
    const reader = consumer("reader");
    for (let n = 1; n <= 3; n++) {
      expect(await echo(gateway, reader)).toBe(200);
      expect(await requestsOf(gateway, reader)).toBe(n);
    }

    gate.close();
    let ended = false;
    const answer = echo(gateway, consumer("waiter")).then((status) => {
      ended = true;
      return status;
    });
    await waitUntil(() => gate.held === 1);
    expect(ended).toBe(false);
    gate.open();
    expect(await answer).toBe(200);
  });

  it("after_answer: the answer ends while its usage write is held, and the count lands once it goes through", async () => {
    const gate = new WriteGate();
    const gateway = await start(store, "after_answer", gate);
    const late = consumer("late");
    gate.close();
    expect(await echo(gateway, late)).toBe(200);
    expect(await echo(gateway, late)).toBe(200);
    await waitUntil(() => gate.held >= 1);
    expect(await requestsOf(gateway, late)).toBe(0);
    gate.open();
    await waitUntil(async () => (await requestsOf(gateway, late)) === 2, 5_000, () => "the held usage never landed");
  });
});
