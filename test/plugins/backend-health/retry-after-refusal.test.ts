/**
 * A model whose every backend sits out a Retry-After it sent: the LLM proxy answers 429 at once,
 * without calling a backend, with the time left as Retry-After, until the first comes back.
 * In-process, fake backends scripted by host, on a clock the test drives. What a user sees: the
 * status, Retry-After and body the client gets, which backend was called, the metrics.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

type Answer = { status: number; headers?: Record<string, string> };

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

const completion = JSON.stringify({
  id: "c",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
});

/** `solo` has one backend; `pair` has `a` (weighted) then `b` (fallback), always in that order. */
function config(health = "") {
  return `
backend_health: { retry_backoff: 1ms, retry_backoff_max: 2ms, ${health} }
services:
  - type: chat
    model: solo
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://s.test:8000", weight: 1, model: real-solo }
  - type: chat
    model: pair
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://a.test:8001", weight: 1 }
      - { url: "http://b.test:8002", weight: 0 }
`;
}

async function setUp(health = "") {
  const clock = new ManualClock();
  const calls: string[] = [];
  /** What each backend (by host) answers; unset = 200. */
  const script: Record<string, Answer | undefined> = {};
  const fakeFetch: typeof fetch = async (input) => {
    const host = new URL(String(input)).hostname.split(".")[0];
    calls.push(host);
    const answer = script[host];
    if (!answer) return new Response(completion, { headers: { "content-type": "application/json" } });
    return new Response(JSON.stringify({ error: { message: `${host} says ${answer.status}`, type: "rate_limit_error" } }), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  };
  const started = await startTestRuntime(config(health), builtinPlugins, { fetch: fakeFetch, clock });
  runtimes.push(started);
  const chat = async (model = "solo") => {
    const response = await started.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.text() };
  };
  const metric = async (line: string) => {
    const found = (await started.metrics.text()).split("\n").find((l) => l.startsWith(line + " "));
    return found === undefined ? 0 : Number(found.slice(line.length + 1));
  };
  const refusals = (model: string) => metric(`svc_llm_retry_after_refusals_total{service_type="chat",model="${model}"}`);
  return { clock, calls, script, chat, metric, refusals };
}

describe("every backend sitting out a Retry-After", () => {
  it("a storm after a backend's 429 with Retry-After: one call, then 429s counting down, counted; then calls resume", async () => {
    const { clock, calls, script, chat, metric, refusals } = await setUp();
    script.s = { status: 429, headers: { "retry-after": "10" } };
    const first = await chat();
    expect(first).toMatchObject({ status: 429, retryAfter: "10" });
    expect(JSON.parse(first.body)).toEqual({ error: { message: "s says 429", type: "rate_limit_error" } });
    expect(calls).toEqual(["s"]);

    // 60 requests at once: none reaches the backend.
    const storm = await Promise.all(Array.from({ length: 60 }, () => chat()));
    expect(calls).toEqual(["s"]);
    for (const answer of storm) {
      expect(answer).toMatchObject({ status: 429, retryAfter: "10" });
      expect(JSON.parse(answer.body)).toEqual({
        error: {
          message: 'every backend of model "solo" is sitting out the Retry-After it sent; retry in 10s',
          type: "rate_limit_error",
          code: "retry_after_refusal",
        },
      });
    }
    expect(await refusals("solo")).toBe(60);

    // The time left, in whole seconds rounded up.
    clock.advance(2_500);
    expect(await chat()).toMatchObject({ status: 429, retryAfter: "8" });
    clock.advance(7_499);
    expect(await chat()).toMatchObject({ status: 429, retryAfter: "1" });
    expect(calls).toEqual(["s"]);
    expect(await refusals("solo")).toBe(62);
    // Refusals are requests the proxy answered too, under the model sent to the backend.
    expect(
      await metric('svc_llm_requests_total{service_type="chat",model="solo",backend_model="real-solo",provider="chat_completions",user_type="",status="429"}'),
    ).toBe(63);

    // Its time is up: the backend is called again.
    clock.advance(1);
    script.s = undefined;
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["s", "s"]);
    expect(await refusals("solo")).toBe(62);
  });

  it("two backends: refused only once both sit out a Retry-After, until the first comes back", async () => {
    const { clock, calls, script, chat, refusals } = await setUp();
    script.a = { status: 429, headers: { "retry-after": "30" } };
    expect((await chat("pair")).status).toBe(200);
    expect(calls).toEqual(["a", "b"]);

    clock.advance(1_000);
    script.b = { status: 429, headers: { "retry-after": "5" } };
    expect(await chat("pair")).toMatchObject({ status: 429, retryAfter: "5" });
    expect(calls).toEqual(["a", "b", "b"]);

    expect(await chat("pair")).toMatchObject({ status: 429, retryAfter: "5" });
    expect(calls).toHaveLength(3);
    expect(await refusals("pair")).toBe(1);
    expect(await refusals("solo")).toBe(0);

    // b is back first (a still sits out).
    clock.advance(5_000);
    script.b = undefined;
    expect((await chat("pair")).status).toBe(200);
    expect(calls).toEqual(["a", "b", "b", "b"]);
  });

  it("a backend ejected for failures (no Retry-After) keeps the rule: the one back soonest is tried", async () => {
    // a is ejected after one 503 (max_ejected_percent 100 lets both go); b sits out a Retry-After.
    const { calls, script, chat, refusals } = await setUp("consecutive_failures: 1, max_ejected_percent: 100");
    script.a = { status: 503 };
    script.b = { status: 429, headers: { "retry-after": "60" } };
    expect((await chat("pair")).status).toBe(429);
    expect(calls).toEqual(["a", "b"]);

    script.a = undefined;
    expect((await chat("pair")).status).toBe(200);
    expect(calls).toEqual(["a", "b", "a"]);
    expect(await refusals("pair")).toBe(0);
  });

  it("retry rounds do not call a backend before its Retry-After: the client gets the last answer at once", async () => {
    const { calls, script, chat, metric } = await setUp("retry_rounds: 3");
    script.s = { status: 429, headers: { "retry-after": "10" } };
    expect(await chat()).toMatchObject({ status: 429, retryAfter: "10" });
    expect(calls).toEqual(["s"]);
    expect(await metric('svc_backend_retry_rounds_total{service_type="chat"}')).toBe(0);
  });
});
