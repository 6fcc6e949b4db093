/**
 * Backend health in-process: the LLM proxy and the sync direct proxy with fake backends that
 * answer 429 with Retry-After or 503, on a clock the test drives. What a user sees: which
 * backend answers, which gets traffic, /-/backends, the metrics.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

type Answer = { status: number; headers?: Record<string, string> };

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

const ok = () =>
  new Response(
    JSON.stringify({ id: "c", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }] }),
    { headers: { "content-type": "application/json" } },
  );

/** A Messages-style answer, for the `messages_api` service's backends (c and d). */
const messagesOk = () =>
  new Response(
    JSON.stringify({
      id: "m",
      type: "message",
      role: "assistant",
      model: "real",
      content: [{ type: "text", text: "ok" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 1, output_tokens: 1 },
    }),
    { headers: { "content-type": "application/json" } },
  );

/** A `messages_api` service (its requests are translated), on backends c then d, like a then b. */
const MESSAGES_SERVICE = `
  - type: messages
    model: claude
    provider: messages_api
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://c.test:8003", weight: 1 }
      - { url: "http://d.test:8004", weight: 0 }`;

/** `a` is the only weighted backend and `b` the fallback, so the order is always a, b. */
function services(health = "", extra = "") {
  return `
${health}
services:
  - type: chat
    model: llm
    provider: chat_completions
    operations: { chat: [/v1/chat/completions] }
    backends:
      - { url: "http://user:secret@a.test:8001/base?key=k", weight: 1 }
      - { url: "http://b.test:8002", weight: 0 }
  - type: embed
    model: direct
    operations: { embed: [/v1/embeddings] }
    backends:
      - { url: "http://user:secret@a.test:8001/base?key=k", weight: 1 }
      - { url: "http://b.test:8002", weight: 0 }${extra}
`;
}

async function setUp(health = "", extra = "") {
  const clock = new ManualClock();
  const calls: string[] = [];
  /** What each backend answers next (by host); unset = 200. */
  const script: Record<string, Answer | undefined> = {};
  const fakeFetch: typeof fetch = async (input) => {
    const host = new URL(String(input)).hostname.split(".")[0];
    calls.push(host);
    const answer = script[host];
    const messages = host === "c" || host === "d";
    if (!answer) return messages ? messagesOk() : ok();
    const error = { message: `${host} says ${answer.status}`, type: "overloaded" };
    return new Response(JSON.stringify(messages ? { type: "error", error } : { error }), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  };
  const started = await startTestRuntime(services(health, extra), builtinPlugins, { fetch: fakeFetch, clock });
  runtimes.push(started);
  const chat = async (model = "llm") => {
    const response = await started.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.text() };
  };
  const embed = async () => {
    const response = await started.request("/v1/embeddings", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "direct", input: "x" }),
    });
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.text() };
  };
  const backends = async () => ((await (await started.request("/-/backends")).json()) as { backends: Array<Record<string, unknown>> }).backends;
  const metric = async (line: string) => {
    const text = await started.metrics.text();
    const found = text.split("\n").find((l) => l.startsWith(line + " "));
    return found === undefined ? undefined : Number(found.slice(line.length + 1));
  };
  return { clock, calls, script, chat, embed, backends, metric };
}

describe("backend health", () => {
  it("a 429 with Retry-After fails over; the backend gets no traffic for its sit-out, then gets it back", async () => {
    const { clock, calls, script, chat } = await setUp();
    script.a = { status: 429, headers: { "retry-after": "10" } };
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["a", "b"]);

    calls.length = 0;
    clock.advance(9_999);
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["b"]);

    calls.length = 0;
    script.a = undefined;
    clock.advance(1);
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["a"]);
  });

  it("caps a Retry-After at retry_after_max", async () => {
    const { clock, calls, script, chat } = await setUp("backend_health: { retry_after_max: 5s }");
    script.a = { status: 429, headers: { "retry-after": "3600" } };
    await chat();
    script.a = undefined;
    calls.length = 0;
    clock.advance(4_999);
    await chat();
    expect(calls).toEqual(["b"]);
    calls.length = 0;
    clock.advance(1);
    await chat();
    expect(calls).toEqual(["a"]);
  });

  it("a 429 with Retry-After from a messages_api backend: it sits out; when all 429, the client gets the translated error with Retry-After", async () => {
    const { clock, calls, script, chat } = await setUp("", MESSAGES_SERVICE);
    script.c = { status: 429, headers: { "retry-after": "10" } };
    expect((await chat("claude")).status).toBe(200);
    expect(calls).toEqual(["c", "d"]);

    calls.length = 0;
    clock.advance(9_999);
    expect((await chat("claude")).status).toBe(200);
    expect(calls).toEqual(["d"]);

    calls.length = 0;
    clock.advance(1);
    script.d = { status: 429, headers: { "retry-after": "7" } };
    const refused = await chat("claude");
    expect(calls).toEqual(["c", "d"]);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe("7");
    // The Messages-style error body, translated to a chat completions one.
    expect(JSON.parse(refused.body)).toEqual({ error: { message: "d says 429", type: "overloaded" } });
  });

  it("the sit-out is shared by the services using the backend, the direct proxy fails over on 429 too", async () => {
    const { calls, script, chat, embed } = await setUp();
    script.a = { status: 429, headers: { "retry-after": "10" } };
    expect((await embed()).status).toBe(200);
    expect(calls).toEqual(["a", "b"]);
    calls.length = 0;
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["b"]);
  });

  it("ejects after consecutive_failures 503s in a row, for ejection_time x n, with metrics and /-/backends", async () => {
    const { clock, calls, script, chat, backends, metric } = await setUp();
    script.a = { status: 503 };
    for (let i = 0; i < 3; i++) expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["a", "b", "a", "b", "a", "b"]);
    expect(await metric('svc_backend_ejections_total{service_type="chat",backend="a.test:8001"}')).toBe(1);
    expect(await metric('svc_backend_ejected{service_type="chat",backend="a.test:8001"}')).toBe(1);
    expect(await metric('svc_backend_ejected{service_type="embed",backend="a.test:8001"}')).toBe(1);
    expect(await metric('svc_backend_ejected{service_type="chat",backend="b.test:8002"}')).toBe(0);
    // Counts since start: a success does not reset them, as it resets consecutive_failures.
    const a = {
      url: "http://a.test:8001/base",
      state: "ejected",
      ejected_until: new Date(clock.now() + 30_000).toISOString(),
      consecutive_failures: 0,
      ejections: 1,
      requests: 3,
      failures: 3,
    };
    const b = { url: "http://b.test:8002", state: "healthy", ejected_until: null, consecutive_failures: 0, ejections: 0, requests: 3, failures: 0 };
    expect(await backends()).toEqual([
      { service_type: "chat", model: "llm", ...a },
      { service_type: "chat", model: "llm", ...b },
      // The same backend: its state is shared.
      { service_type: "embed", model: "direct", ...a },
      { service_type: "embed", model: "direct", ...b },
    ]);

    calls.length = 0;
    clock.advance(29_999);
    await chat();
    expect(calls).toEqual(["b"]);

    // Back after 30s; three more failures eject it for 2 x 30s.
    clock.advance(1);
    calls.length = 0;
    for (let i = 0; i < 3; i++) await chat();
    expect(calls).toEqual(["a", "b", "a", "b", "a", "b"]);
    expect(await metric('svc_backend_ejections_total{service_type="chat",backend="a.test:8001"}')).toBe(2);
    expect((await backends())[0]).toMatchObject({
      state: "ejected",
      ejected_until: new Date(clock.now() + 60_000).toISOString(),
      ejections: 2,
      requests: 6,
      failures: 6,
    });
    expect((await backends())[1]).toMatchObject({ state: "healthy", ejections: 0, requests: 7, failures: 0 });
    expect(await metric('svc_backend_ejected{service_type="chat",backend="a.test:8001"}')).toBe(1);
    clock.advance(60_000);
    expect(await metric('svc_backend_ejected{service_type="chat",backend="a.test:8001"}')).toBe(0);
  });

  it("max_ejection_time caps the growing ejection: 30s, then 45s, then 45s again", async () => {
    const { clock, calls, script, chat, backends } = await setUp("backend_health: { ejection_time: 30s, max_ejection_time: 45s }");
    script.a = { status: 503 };
    for (const expectedMs of [30_000, 45_000, 45_000]) {
      calls.length = 0;
      for (let i = 0; i < 3; i++) await chat();
      expect(calls).toEqual(["a", "b", "a", "b", "a", "b"]);
      expect((await backends())[0]).toMatchObject({ state: "ejected", ejected_until: new Date(clock.now() + expectedMs).toISOString() });
      // Sits out until the cap, not a moment longer.
      clock.advance(expectedMs - 1);
      calls.length = 0;
      await chat();
      expect(calls).toEqual(["b"]);
      clock.advance(1);
    }
  });

  it("never ejects more than max_ejected_percent of a service's backends", async () => {
    const { calls, script, chat, backends } = await setUp();
    script.a = { status: 503 };
    script.b = { status: 503 };
    for (let i = 0; i < 6; i++) expect((await chat()).status).toBe(503);
    const states = (await backends()).filter((b) => b.service_type === "chat").map((b) => b.state);
    expect(states).toEqual(["ejected", "healthy"]);
    calls.length = 0;
    await chat();
    expect(calls).toEqual(["b"]);
  });

  it("when every backend is ejected, tries the one back soonest; the client gets the last failure meanwhile", async () => {
    // One failure ejects; max_ejected_percent 100 lets both go.
    const { clock, calls, script, chat } = await setUp("backend_health: { consecutive_failures: 1, max_ejected_percent: 100 }");
    script.a = { status: 503 };
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["a", "b"]);

    clock.advance(1_000);
    script.b = { status: 503 };
    expect((await chat()).status).toBe(503);
    expect(calls).toEqual(["a", "b", "b"]);

    // Both sit out; a was ejected first, so it is back first and tried alone.
    calls.length = 0;
    script.a = undefined;
    expect((await chat()).status).toBe(200);
    expect(calls).toEqual(["a"]);
  });

  it("a 4xx other than 429 never fails over", async () => {
    const { calls, script, chat } = await setUp();
    script.a = { status: 400 };
    expect((await chat()).status).toBe(400);
    expect(calls).toEqual(["a"]);
  });

  it("failover_statuses [500, 502, 503, 504] gives the spec's rule: a 429 is the client's answer", async () => {
    const { calls, script, chat } = await setUp("backend_health: { failover_statuses: [500, 502, 503, 504] }");
    script.a = { status: 429, headers: { "retry-after": "10" } };
    const answer = await chat();
    expect(answer.status).toBe(429);
    expect(answer.retryAfter).toBe("10");
    expect(calls).toEqual(["a"]);
    calls.length = 0;
    await chat();
    expect(calls).toEqual(["a"]);
  });

  it("consecutive_failures 0 never ejects", async () => {
    const { calls, script, chat } = await setUp("backend_health: { consecutive_failures: 0 }");
    script.a = { status: 503 };
    for (let i = 0; i < 5; i++) await chat();
    expect(calls.filter((host) => host === "a")).toHaveLength(5);
  });

  it("refuses a failover status that is the client's error, saying what to list", () => {
    expect(() => loadConfig(services("backend_health: { failover_statuses: [404, 503] }"), {})).toThrow(
      /backend_health\.failover_statuses: 404 cannot fail over; list 429 or statuses 500-599/,
    );
  });
});
