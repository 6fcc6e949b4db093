/**
 * When the response cache's read starts. Without input hooks it starts as soon as the model is
 * resolved, beside access and limits; a request an input hook may change (a guardrail that
 * masks) is read only after the hook ran, as changed. A guardrail on one model must not hold
 * back the other models' reads: the store's commands, in the order the gateway sent them, show
 * the read before the rate limit's counter for those, after it for the guarded model.
 */
import { afterEach, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { CACHE_PREFIX } from "../../../plugins/response-cache/key.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const CONFIG = `
server: { consumer_header: x-consumer }
rate_limits:
  chat:
    "*": { rate: 100, period: 1m }
guardrails:
  - { name: pii-in, kind: pii, on: [input], action: mask, entities: [email], models: [guarded] }
services:
  - { type: chat, model: guarded, provider: chat_completions, inference_url: "http://backend.test", response_cache_ttl: 60, operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: open, provider: chat_completions, inference_url: "http://backend.test", response_cache_ttl: 60, operations: { chat: [/v1/chat/completions] } }
`;

const completion = JSON.stringify({
  id: "c",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

/** The store with each command recorded as "cache" (a read or write of a cached answer) or "rate" (the rate limit's counter). */
function recording(memory: MemoryKv, commands: string[]): KvStore {
  const kindOf = (key: unknown) => (typeof key !== "string" ? undefined : key.startsWith(CACHE_PREFIX) ? "cache" : key.startsWith("rl:") ? "rate" : undefined);
  return new Proxy(memory, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const kind = kindOf(args[0]) ?? (Array.isArray(args[1]) ? kindOf(args[1][0]) : undefined);
        if (kind) commands.push(kind);
        return value.apply(target, args);
      };
    },
  });
}

it("starts the cache read before the limits for a model no input guardrail names, after them for one it names", async () => {
  const commands: string[] = [];
  const started = await startTestRuntime(CONFIG, builtinPlugins, {
    kv: (memory) => recording(memory, commands),
    fetch: async () => new Response(completion, { headers: { "content-type": "application/json" } }),
  });
  runtimes.push(started);
  const ask = async (model: string) => {
    commands.length = 0;
    const response = await started.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": "ann" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: `write to ann@example.com (${model})` }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-cache")).toBe("MISS");
    await response.text();
    return commands.filter((kind, i) => commands.indexOf(kind) === i);
  };
  expect(await ask("open")).toEqual(["cache", "rate"]);
  expect(await ask("guarded")).toEqual(["rate", "cache"]);
});
