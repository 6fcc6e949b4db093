/**
 * Retry rounds (backend_health.retry_rounds / retry_deadline / retry_backoff) in-process: the
 * LLM proxy and the sync direct proxy in front of fake backends scripted call by call, on a
 * clock the test drives (a backend call can take "time" by moving it). What a user sees: the
 * status the client gets, which backend was called how often, the retry-round metric.
 * The waits are real timers: the tests keep them at a millisecond or two.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

type Step = { status: number; headers?: Record<string, string> } | "drop";

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

const completion = JSON.stringify({
  id: "c",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
});
const chunk = JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }] });

/** `solo` has one backend; `pair` has `a` (weighted) then `b` (fallback), always in that order. */
function config(health: string) {
  return `
backend_health: { retry_backoff: 1ms, retry_backoff_max: 2ms, ${health} }
services:
  - type: chat
    model: solo
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://s.test:8000", weight: 1 }
  - type: chat
    model: pair
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://a.test:8001", weight: 1 }
      - { url: "http://b.test:8002", weight: 0 }
  - type: embed
    model: direct
    operations: { embed: [/v1/embeddings] }
    backends:
      - { url: "http://d.test:8003", weight: 1 }
  - type: transcribe
    model: upload
    operations: { transcribe: [/v1/upload] }
    backends:
      - { url: "http://u.test:8004", weight: 1 }
`;
}

async function setUp(health = "") {
  const clock = new ManualClock();
  const calls: string[] = [];
  /** What each backend (by host) answers on its next calls, in order; used up = 200. */
  const script: Record<string, Step[]> = {};
  /** How long each backend call takes on the test's clock. */
  let callMs = 0;
  const fakeFetch: typeof fetch = async (input, init) => {
    const host = new URL(String(input)).hostname.split(".")[0];
    calls.push(host);
    clock.advance(callMs);
    // An upload is read whole, as a backend would, and echoed on success.
    const upload = host === "u" ? await new Response(init?.body).text() : "";
    const step = script[host]?.shift();
    if (step === "drop") throw new TypeError("fetch failed: connection refused");
    if (step) {
      return new Response(JSON.stringify({ error: { message: `${host} says ${step.status}`, type: "overloaded" } }), {
        status: step.status,
        headers: { "content-type": "application/json", ...step.headers },
      });
    }
    if (host === "u") return new Response(JSON.stringify({ received: upload }), { headers: { "content-type": "application/json" } });
    const sent = typeof init?.body === "string" ? init.body : new TextDecoder().decode(init?.body as Uint8Array);
    const stream = (JSON.parse(sent) as { stream?: boolean }).stream === true;
    if (stream) return new Response(`data: ${chunk}\n\ndata: [DONE]\n\n`, { headers: { "content-type": "text/event-stream" } });
    return new Response(completion, { headers: { "content-type": "application/json" } });
  };
  const started = await startTestRuntime(config(health), builtinPlugins, { fetch: fakeFetch, clock });
  runtimes.push(started);
  const call = async (path: string, body: Record<string, unknown>) => {
    const response = await started.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.text() };
  };
  const chat = (model = "solo", stream = false) => call("/v1/chat/completions", { model, messages: [], ...(stream ? { stream } : {}) });
  const embed = () => call("/v1/embeddings", { model: "direct", input: "x" });
  /** A streamed (non-JSON) body: the gateway sends it on as a stream. */
  const upload = async (text: string) => {
    const body = new Blob([text]).stream();
    const response = await started.request(
      "/v1/upload",
      { method: "POST", headers: { "content-type": "application/octet-stream" }, body, duplex: "half" } as RequestInit,
    );
    return { status: response.status, body: await response.text() };
  };
  const rounds = async (serviceType: string) => {
    const line = (await started.metrics.text()).split("\n").find((l) => l.startsWith(`svc_backend_retry_rounds_total{service_type="${serviceType}"} `));
    return line === undefined ? 0 : Number(line.split(" ").at(-1));
  };
  return { calls, script, chat, embed, upload, rounds, setCallMs: (ms: number) => (callMs = ms) };
}

describe("backend retry rounds", () => {
  it("retry_rounds 1 (the default) is one pass: a backend's 503 is the client's answer", async () => {
    const { calls, script, chat } = await setUp();
    script.s = [{ status: 503 }];
    expect((await chat()).status).toBe(503);
    expect(calls).toEqual(["s"]);
  });

  it("retry_rounds 2: a backend that answers 503 then 200 gets the client a 200, and the round is counted", async () => {
    const { calls, script, chat, rounds } = await setUp("retry_rounds: 2");
    script.s = [{ status: 503 }];
    const answer = await chat();
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ choices: [{ message: { content: "ok" } }] });
    expect(calls).toEqual(["s", "s"]);
    expect(await rounds("chat")).toBe(1);
  });

  it("a network error counts as a failed pass too; the direct proxy retries the same way", async () => {
    const { calls, script, embed, rounds } = await setUp("retry_rounds: 3");
    script.d = ["drop", { status: 502 }];
    expect((await embed()).status).toBe(200);
    expect(calls).toEqual(["d", "d", "d"]);
    expect(await rounds("embed")).toBe(2);
  });

  it("a streamed upload to a single backend is sent again, whole, in the next round", async () => {
    const { calls, script, upload } = await setUp("retry_rounds: 2");
    script.u = [{ status: 503 }];
    const answer = await upload("audio bytes");
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ received: "audio bytes" });
    expect(calls).toEqual(["u", "u"]);
  });

  it("a stream that is refused before its first bytes is retried in the next round", async () => {
    const { calls, script, chat } = await setUp("retry_rounds: 2");
    script.s = [{ status: 503 }];
    const answer = await chat("solo", true);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("data: [DONE]");
    expect(calls).toEqual(["s", "s"]);
  });

  it("when every round fails, the client gets the last backend's answer with its Retry-After", async () => {
    const { calls, script, chat, rounds } = await setUp("retry_rounds: 3, consecutive_failures: 0");
    script.s = [{ status: 503 }, { status: 502 }, { status: 429, headers: { "retry-after": "7" } }];
    const answer = await chat();
    expect(answer.status).toBe(429);
    expect(answer.retryAfter).toBe("7");
    expect(calls).toEqual(["s", "s", "s"]);
    expect(await rounds("chat")).toBe(2);
  });

  it("a round skips the backends sitting out: an ejected backend is not called again", async () => {
    // a is ejected by its first failure; b cannot be (max_ejected_percent 50 of 2 backends).
    const { calls, script, chat } = await setUp("retry_rounds: 2, consecutive_failures: 1");
    script.a = [{ status: 503 }, { status: 503 }];
    script.b = [{ status: 503 }];
    expect((await chat("pair")).status).toBe(200);
    expect(calls).toEqual(["a", "b", "b"]);
  });

  it("when every backend is ejected, a round tries the one back soonest", async () => {
    // One failure ejects; max_ejected_percent 100 lets both go (same time: a, first in order, is tried).
    const { calls, script, chat } = await setUp("retry_rounds: 2, consecutive_failures: 1, max_ejected_percent: 100");
    script.a = [{ status: 503 }];
    script.b = [{ status: 503 }];
    expect((await chat("pair")).status).toBe(200);
    expect(calls).toEqual(["a", "b", "a"]);
  });

  it("the deadline stops rounds: with retry_rounds 5 a backend slower than retry_deadline is called once", async () => {
    const { calls, script, chat, setCallMs, rounds } = await setUp("retry_rounds: 5, retry_deadline: 1s");
    setCallMs(1_500);
    script.s = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }];
    expect((await chat()).status).toBe(503);
    expect(calls).toEqual(["s"]);
    expect(await rounds("chat")).toBe(0);
  });

  it("the deadline also ends a round midway: no attempt starts past it", async () => {
    // 400 ms a call, 1 s budget: a, b (0.8 s), then round 2 starts in time, a ends at 1.2 s, b is not tried.
    const { calls, script, chat, setCallMs } = await setUp("retry_rounds: 5, retry_deadline: 1s, consecutive_failures: 0");
    setCallMs(400);
    script.a = [{ status: 503 }, { status: 503 }, { status: 503 }];
    script.b = [{ status: 503 }, { status: 503 }, { status: 503 }];
    expect((await chat("pair")).status).toBe(503);
    expect(calls).toEqual(["a", "b", "a"]);
  });

  it("refuses a backoff cap below the backoff and a zero deadline, saying what to change", () => {
    expect(() => loadConfig(config("").replace("retry_backoff: 1ms, retry_backoff_max: 2ms", "retry_backoff: 2s, retry_backoff_max: 1s"), {})).toThrow(
      /backend_health\.retry_backoff_max: 1s is shorter than retry_backoff \(2s\)/,
    );
    expect(() => loadConfig(config("retry_deadline: 0s"), {})).toThrow(/backend_health\.retry_deadline: must be a positive duration/);
    expect(() => loadConfig(config("retry_rounds: 0"), {})).toThrow(/retry_rounds/);
  });
});
