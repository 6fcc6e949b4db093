import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import type { CachedAnswer, CacheLookup, ResponseCache } from "../../../core/llm/cache.ts";
import { canonicalJson } from "../../../plugins/response-cache/canonical.ts";
import { decodeEntry, encodeEntry } from "../../../plugins/response-cache/entry.ts";
import responseCache from "../../../plugins/response-cache/index.ts";
import { cacheKey } from "../../../plugins/response-cache/key.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

describe("canonicalJson", () => {
  it("sorts keys at every depth and drops whitespace, keeping array order", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson(JSON.parse('{ "x" : 1.0 , "w":"é" }'))).toBe('{"w":"é","x":1}');
  });

  it("orders keys by UTF-16 code units, however many there are", () => {
    const sorted = (keys: string[]) => `{${[...keys].sort().map((key) => `${JSON.stringify(key)}:1`).join(",")}}`;
    const few = ["b", "B", "a", "10", "2", "1", "é", "😀", "\uffff", "", "ab", "a b"];
    expect(canonicalJson(Object.fromEntries(few.map((key) => [key, 1])))).toBe(sorted(few));
    const many = Array.from({ length: 40 }, (_, i) => `k${(i * 7919) % 97}`);
    expect(canonicalJson(Object.fromEntries(many.map((key) => [key, 1])))).toBe(sorted(many));
  });

  it("leaves out undefined fields", () => {
    expect(canonicalJson({ a: undefined, b: 2 })).toBe('{"b":2}');
  });
});

describe("cacheKey", () => {
  const body = { messages: [{ role: "user", content: "hi" }], temperature: 0.5 };
  const scope = { serviceType: "chat", pathAndQuery: "/v1/chat/completions" };

  it("is the SHA-256 of the service type, path and canonical subset with the model alias, under cache:llm:", () => {
    const expected = createHash("sha256")
      .update('["chat","/v1/chat/completions",{"messages":[{"content":"hi","role":"user"}],"model":"alias","temperature":0.5}]')
      .digest("hex");
    expect(cacheKey(scope, "alias", { ...body, model: "ignored-client-value" })).toBe(`cache:llm:${expected}`);
  });

  it("ignores user, metadata, stream options and unknown fields; not temperature, top_p, stop, tools, tool_choice, system", () => {
    const key = cacheKey(scope, "alias", body);
    expect(cacheKey(scope, "alias", { ...body, user: "u", metadata: { a: 1 }, max_tokens: 3, whatever: true })).toBe(key);
    for (const change of [{ temperature: 0.6 }, { top_p: 1 }, { stop: "x" }, { tools: [] }, { tool_choice: "auto" }, { system: "s" }]) {
      expect(cacheKey(scope, "alias", { ...body, ...change })).not.toBe(key);
    }
    expect(cacheKey(scope, "other-alias", body)).not.toBe(key);
  });

  it("keys an inbound Messages request on its own answer-changing fields too: stop_sequences, top_k, thinking", () => {
    const messages = { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] };
    const key = cacheKey({ serviceType: "chat", pathAndQuery: "/v1/messages" }, "alias", messages);
    for (const change of [{ stop_sequences: ["x"] }, { top_k: 5 }, { thinking: { type: "enabled", budget_tokens: 1024 } }]) {
      expect(cacheKey({ serviceType: "chat", pathAndQuery: "/v1/messages" }, "alias", { ...messages, ...change })).not.toBe(key);
    }
  });

  it("keys a streamed request apart, leaving the non-streamed key as it was", () => {
    const key = cacheKey(scope, "alias", body);
    expect(cacheKey({ ...scope, stream: false }, "alias", body)).toBe(key);
    const streamed = cacheKey({ ...scope, stream: true }, "alias", body);
    expect(streamed).not.toBe(key);
    // Its events depend on its stream options (the usage chunk, for one).
    expect(cacheKey({ ...scope, stream: true }, "alias", { ...body, stream_options: { include_usage: false } })).not.toBe(streamed);
  });

  it("differs by service type, path and query", () => {
    const key = cacheKey(scope, "alias", body);
    expect(cacheKey({ ...scope, serviceType: "chatmsg" }, "alias", body)).not.toBe(key);
    expect(cacheKey({ ...scope, pathAndQuery: "/v1/messages-chat" }, "alias", body)).not.toBe(key);
    expect(cacheKey({ ...scope, pathAndQuery: "/v1/chat/completions?x=1" }, "alias", body)).not.toBe(key);
  });

  it("with spec (the default), n, max_tokens, response_format, seed, logprobs and penalties do not change a chat request's key", () => {
    const key = cacheKey(scope, "alias", body);
    const generation = { n: 3, max_tokens: 5, response_format: { type: "json_object" }, seed: 7, logprobs: true, presence_penalty: 1, frequency_penalty: 1 };
    expect(cacheKey(scope, "alias", { ...body, ...generation })).toBe(key);
    expect(cacheKey(scope, "alias", { ...body, ...generation }, "spec")).toBe(key);
  });

  it("with full, every field changes the key but those that cannot change the answer; key order does not", () => {
    const full = (extra: Record<string, unknown>) => cacheKey(scope, "alias", { model: "client", ...body, ...extra }, "full");
    const key = full({});
    for (
      const change of [
        { n: 3 },
        { n: 1 },
        { max_tokens: 5 },
        { response_format: { type: "json_object" } },
        { seed: 7 },
        { logprobs: true },
        { presence_penalty: 1 },
        { frequency_penalty: 0.5 },
        { a_field_from_next_year: 1 },
      ]
    ) {
      expect(full(change), JSON.stringify(change)).not.toBe(key);
    }
    expect(full({ n: 3 })).not.toBe(full({ n: 1 }));
    expect(full({ response_format: { type: "json_object" } })).not.toBe(full({ response_format: { type: "text" } }));
    const unchanged = {
      user: "u",
      safety_identifier: "s",
      metadata: { a: 1 },
      store: true,
      prompt_cache_key: "p",
      keep_alive: "5m",
      stream: false,
      stream_options: { include_usage: true },
    };
    expect(full(unchanged)).toBe(key);
    expect(cacheKey(scope, "alias", { ...body, model: "another-client-value" }, "full")).toBe(key);
    // Canonical: the order of keys, at any depth, does not matter.
    const ordered = { response_format: { type: "json_schema", json_schema: { name: "x", schema: { a: 1, b: 2 } } }, n: 2 };
    const reordered = { n: 2, response_format: { json_schema: { schema: { b: 2, a: 1 }, name: "x" }, type: "json_schema" } };
    expect(full(reordered)).toBe(full(ordered));
    // A body with only the spec's fields has the same key under both settings.
    expect(key).toBe(cacheKey(scope, "alias", body));
    // A stream is still keyed apart, with its stream options.
    const streamed = cacheKey({ ...scope, stream: true }, "alias", { ...body, stream: true }, "full");
    expect(streamed).not.toBe(key);
    expect(cacheKey({ ...scope, stream: true }, "alias", { ...body, stream: true, stream_options: { include_usage: true } }, "full")).not.toBe(streamed);
  });

  it("keys a body without messages on all of it but model, user, metadata and stream fields", () => {
    const input = { model: "client-value", input: "x", dimensions: 8 };
    const key = cacheKey(scope, "alias", input);
    expect(cacheKey(scope, "alias", { ...input, model: "other", user: "u", metadata: { a: 1 }, stream: false })).toBe(key);
    expect(cacheKey(scope, "alias", { ...input, input: "totally different" })).not.toBe(key);
    expect(cacheKey(scope, "alias", { ...input, dimensions: 16 })).not.toBe(key);
    expect(cacheKey(scope, "alias", { prompt: "x" })).not.toBe(cacheKey(scope, "alias", { prompt: "y" }));
    expect(cacheKey(scope, "alias", JSON.parse('{"input":"x","__proto__":{"a":1}}') as Record<string, unknown>)).not.toBe(
      cacheKey(scope, "alias", { input: "x" }),
    );
  });
});

describe("cache entries", () => {
  it("round-trip text and binary bodies exactly", () => {
    const text: CachedAnswer = { status: 200, contentType: "application/json", body: new TextEncoder().encode('{"a":"é"}') };
    const binary: CachedAnswer = { status: 201, contentType: "application/octet-stream", body: new Uint8Array([0xff, 0x00, 0xc3]) };
    for (const answer of [text, binary]) expect(decodeEntry(encodeEntry(answer))).toEqual(answer);
    expect(() => decodeEntry('{"nope":1}')).toThrow("not a cache entry");
  });
});

/** A memory store whose operations can be made to fail. */
class FlakyKv extends MemoryKv {
  failing = false;
  reads = 0;
  override async get(key: string): Promise<string | null> {
    this.reads++;
    if (this.failing) throw new Error("store down");
    return await super.get(key);
  }
  override async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (this.failing) throw new Error("store down");
    await super.set(key, value, ttlMs);
  }
}

describe("the responseCache service", () => {
  const runtimes: TestRuntime[] = [];
  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });

  async function setUp(llm = "") {
    const kv = new FlakyKv();
    let cache: ResponseCache | undefined;
    const started = await startTestRuntime(
      llm +
        "services:\n  - { type: chat, model: m, provider: chat_completions, response_cache_ttl: 60 }\n  - { type: chat, model: z, provider: chat_completions }\n",
      [responseCache],
      { kv, fetch: () => Promise.reject(new Error("not used")), probeDependsOn: ["response-cache"], probe: (api) => void (cache = api.use("responseCache")) },
    );
    runtimes.push(started);
    const { config, metrics } = started;
    const lookup = (body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<CacheLookup> => {
      const service = config.services.find((s) => s.model === body.model) ?? config.services[0];
      return (cache as ResponseCache).lookup({ service, body, headers: new Headers(headers), pathAndQuery: "/v1/chat/completions" });
    };
    const begin = (body: Record<string, unknown>) =>
      (cache as ResponseCache).begin({ service: config.services[0], body, headers: new Headers(), pathAndQuery: "/v1/chat/completions" });
    return { kv, metrics, lookup, begin };
  }

  const answer = (status = 200): CachedAnswer => ({ status, contentType: "application/json", body: new TextEncoder().encode('{"ok":true}') });
  const body = { model: "m", messages: [{ role: "user", content: "q" }] };

  it("misses, fills, then hits, counting both", async () => {
    const { metrics, lookup } = await setUp();
    const first = await lookup(body);
    expect(first.kind).toBe("miss");
    if (first.kind === "miss") await first.fill(answer());
    const second = await lookup(body);
    expect(second).toEqual({ kind: "hit", answer: answer() });
    const text = await metrics.text();
    expect(text).toContain('svc_cache_misses_total{service_type="chat",model="m"} 1');
    expect(text).toContain('svc_cache_hits_total{service_type="chat",model="m"} 1');
  });

  it("never stores a non-2xx answer", async () => {
    const { lookup } = await setUp();
    const first = await lookup(body);
    if (first.kind === "miss") await first.fill(answer(500));
    expect((await lookup(body)).kind).toBe("miss");
  });

  it("is bypassed for streams, no-cache and TTL 0, without counting", async () => {
    const { metrics, lookup } = await setUp();
    expect((await lookup({ ...body, stream: true })).kind).toBe("bypass");
    expect((await lookup(body, { "cache-control": "max-age=0, No-Cache" })).kind).toBe("bypass");
    expect((await lookup({ ...body, model: "z" })).kind).toBe("bypass");
    expect(await metrics.text()).not.toMatch(/svc_cache_(hits|misses)_total\{/);
  });

  it("with llm.cache_streams, stores a stream's answer apart from the non-streamed answer", async () => {
    const { lookup } = await setUp("llm: { cache_streams: true }\n");
    const events: CachedAnswer = { status: 200, contentType: "text/event-stream", body: new TextEncoder().encode("data: [DONE]\n\n") };
    const streamed = await lookup({ ...body, stream: true });
    expect(streamed.kind).toBe("miss");
    if (streamed.kind === "miss") await streamed.fill(events);
    expect(await lookup({ ...body, stream: true })).toEqual({ kind: "hit", answer: events });
    expect((await lookup(body)).kind).toBe("miss");
  });

  it("with llm.cache_key: full, n and response_format key separate answers; user does not", async () => {
    const { lookup } = await setUp("llm: { cache_key: full }\n");
    const one = await lookup({ ...body, n: 1 });
    expect(one.kind).toBe("miss");
    if (one.kind === "miss") await one.fill(answer());
    expect((await lookup({ ...body, n: 3 })).kind).toBe("miss");
    expect((await lookup({ ...body, n: 1, response_format: { type: "json_object" } })).kind).toBe("miss");
    expect(await lookup({ user: "someone else", n: 1, ...body })).toEqual({ kind: "hit", answer: answer() });
  });

  it("with the default llm.cache_key (spec), n and response_format share the answer", async () => {
    const { lookup } = await setUp();
    const one = await lookup({ ...body, n: 1 });
    if (one.kind === "miss") await one.fill(answer());
    expect(await lookup({ ...body, n: 3, response_format: { type: "json_object" } })).toEqual({ kind: "hit", answer: answer() });
  });

  it("never stores an event stream under a non-streamed request's key, nor a plain answer under a streamed one's", async () => {
    const { lookup } = await setUp("llm: { cache_streams: true }\n");
    /** A lookup's kind; a miss is settled at once (an unsettled miss would hold identical lookups). */
    const kindOf = async (request: Record<string, unknown>) => {
      const found = await lookup(request);
      if (found.kind === "miss") found.share(undefined);
      return found.kind;
    };
    const fillMiss = async (request: Record<string, unknown>, stored: CachedAnswer) => {
      const found = await lookup(request);
      expect(found.kind).toBe("miss");
      if (found.kind === "miss") await found.fill(stored);
    };
    const events: CachedAnswer = {
      status: 200,
      contentType: "text/event-stream; charset=utf-8",
      body: new TextEncoder().encode('data: {"x":1}\n\ndata: [DONE]\n\n'),
    };
    const ndjson: CachedAnswer = { status: 200, contentType: "application/x-ndjson", body: new TextEncoder().encode('{"done":true}\n') };
    for (const streamed of [events, ndjson]) {
      await fillMiss(body, streamed);
      expect(await kindOf(body)).toBe("miss");
    }
    await fillMiss({ ...body, stream: true }, answer());
    expect(await kindOf({ ...body, stream: true })).toBe("miss");
    // Each kind under its own key is stored as before.
    await fillMiss(body, answer());
    await fillMiss({ ...body, stream: true }, ndjson);
    expect(await lookup(body)).toEqual({ kind: "hit", answer: answer() });
    expect(await lookup({ ...body, stream: true })).toEqual({ kind: "hit", answer: ndjson });
  });

  it("does not serve an event stream already stored under a non-streamed request's key: a get error, then a miss", async () => {
    const { kv, metrics, lookup } = await setUp();
    const key = cacheKey({ serviceType: "chat", pathAndQuery: "/v1/chat/completions", stream: false }, "m", body);
    await kv.set(key, encodeEntry({ status: 200, contentType: "text/event-stream", body: new TextEncoder().encode("data: [DONE]\n\n") }));
    expect((await lookup(body)).kind).toBe("miss");
    const text = await metrics.text();
    expect(text).toContain('svc_cache_errors_total{service_type="chat",model="m",op="get"} 1');
    expect(text).not.toContain("svc_cache_hits_total{");
  });

  it("counts store errors by op and goes on without the cache", async () => {
    const { kv, metrics, lookup } = await setUp();
    kv.failing = true;
    expect((await lookup(body)).kind).toBe("bypass");
    kv.failing = false;
    const miss = await lookup(body);
    kv.failing = true;
    if (miss.kind === "miss") await miss.fill(answer());
    kv.failing = false;
    const text = await metrics.text();
    expect(text).toContain('svc_cache_errors_total{service_type="chat",model="m",op="get"} 1');
    expect(text).toContain('svc_cache_errors_total{service_type="chat",model="m",op="set"} 1');
  });

  it("begin reads the store at once and counts the lookup only when its result is asked for", async () => {
    const { kv, metrics, lookup, begin } = await setUp();
    const first = await lookup(body);
    if (first.kind === "miss") await first.fill(answer());
    const readsBefore = kv.reads;

    const pending = begin(body);
    expect(kv.reads).toBe(readsBefore + 1);
    expect(await metrics.text()).not.toContain("svc_cache_hits_total{");
    expect(await pending.result()).toEqual({ kind: "hit", answer: answer() });
    expect(await metrics.text()).toContain('svc_cache_hits_total{service_type="chat",model="m"} 1');
  });

  it("a begun lookup nobody asks about counts nothing, even when the store fails", async () => {
    const { kv, metrics, begin } = await setUp();
    kv.failing = true;
    begin(body);
    begin({ ...body, messages: [] });
    // Let the failed reads settle: an unobserved rejection would fail the run.
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(await metrics.text()).not.toMatch(/svc_cache_(hits|misses|errors)_total\{/);
  });
});
