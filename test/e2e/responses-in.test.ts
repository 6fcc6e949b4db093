/**
 * The Responses API (`POST /v1/responses`) as its clients meet it: the official `openai` client
 * with only its base URL pointed at a real gateway process (Node, and Deno in the Deno subset),
 * in front of a chat-completions fake and a Messages-style fake (translated both ways, the
 * conversation rebuilt from the gateway's store) and a fake that speaks the Responses API itself
 * (`responses_api`, forwarded as is): text with and without instructions, streams (the stream
 * helper's final response equals the non-streamed one, events in order by `sequence_number`),
 * a function-call round trip over `previous_response_id`, retrieve / input items / delete,
 * ownership, usage, honest stream endings, and bad input refused before any backend sees it.
 * On the embedded store and on Redis (there with encryption at rest).
 */
import OpenAI from "openai";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";
import { flushRedisDb, kvStoreYaml } from "../support/stores-yaml.ts";
import { CHAT_USAGE, type FakeBackend, MESSAGES_USAGE, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type FakeResponsesBackend, RESPONSES_USAGE, startResponsesBackend } from "../fixtures/responses-backend.ts";
import { metricSum } from "../support/prometheus.ts";
import { sseEvents } from "../support/sse.ts";

type Json = Record<string, unknown>;

const DB = 29;
const ENCRYPTION_KEY = "4f".repeat(32);
const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};

/** The sum of a series' samples whose labels include `labels` (test/support/prometheus.ts). */
async function metric(gw: GatewayProcess, name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await (await fetch(`${gw.url}/metrics`)).text(), name, labels);
}

const BACKENDS = [
  {
    kind: "a chat-completions backend",
    model: "resp-chat",
    answer: "echo: hi",
    usage: { input: CHAT_USAGE.prompt_tokens, output: CHAT_USAGE.completion_tokens },
  },
  {
    kind: "a Messages-style backend",
    model: "resp-messages",
    answer: "Hello there",
    usage: { input: MESSAGES_USAGE.input_tokens, output: MESSAGES_USAGE.output_tokens },
  },
  {
    kind: "a Responses-native backend",
    model: "resp-native",
    answer: "echo: hi",
    usage: { input: RESPONSES_USAGE.input_tokens, output: RESPONSES_USAGE.output_tokens },
  },
] as const;

let llm: FakeBackend;
let native: FakeResponsesBackend;

beforeAll(async () => {
  [llm, native] = await Promise.all([startLlmBackend(), startResponsesBackend()]);
  await flushRedisDb(DB);
});

afterAll(async () => {
  await Promise.all([llm?.stop(), native?.stop()]);
});

const OPERATIONS = "operations: { responses: [/v1/responses, /v1/responses/input_tokens] }";

describe.each(["memory", "redis"] as const)("the Responses API on the %s store", (store) => {
  let gw: GatewayProcess;
  const clientOf = (consumer: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "test-key", maxRetries: 0, defaultHeaders: { "x-consumer": consumer } });
  let client: OpenAI;

  beforeAll(async () => {
    const encryption = store === "redis" ? `object_store:\n  encryption:\n    key: "${ENCRYPTION_KEY}"\n` : "";
    gw = await startGateway(`
server:
  backend_timeout: 5s
  consumer_header: x-consumer
${kvStoreYaml(store, DB)}
${encryption}llm:
  count_streamed_tokens: true
  stream_idle_timeout: 500ms
services:
  - { type: chat, model: resp-chat, provider: chat_completions, inference_url: ${llm.url}, ${OPERATIONS} }
  - { type: chat, model: resp-messages, provider: messages_api, inference_url: ${llm.url}, ${OPERATIONS} }
  - { type: chat, model: resp-native, provider: responses_api, inference_url: ${native.url}, ${OPERATIONS} }
`);
    client = clientOf(`ann-${store}`);
  });

  afterAll(async () => {
    await gw?.kill();
  });

  describe.each(BACKENDS)("to $kind", ({ model, answer, usage }) => {
    it("answers a string input with the backend's text, a Response with its usage", async () => {
      const response = await client.responses.create({ model, input: "hi" });
      expect(response.output_text).toBe(answer);
      expect(response).toMatchObject({ object: "response", status: "completed", usage: { input_tokens: usage.input, output_tokens: usage.output } });
      expect(response.id).toMatch(/^resp_/);
      expect(response.usage?.total_tokens).toBe(usage.input + usage.output);
    });

    it("sends the instructions on as the backend's system prompt", async () => {
      const instructions = `be brief ${model} ${store}`;
      const response = await client.responses.create({ model, instructions, input: "hi" });
      expect(response.output_text).toBe(answer);
      expect(response.instructions).toBe(instructions);
      const sent = [...llm.received.map((r) => r.body), ...native.received.map((r) => r.body)].filter((b) => JSON.stringify(b).includes(instructions));
      expect(sent).toHaveLength(1);
      const body = sent[0] as Json;
      if (model === "resp-native") expect(body.instructions).toBe(instructions);
      else if (model === "resp-messages") expect(body.system).toBe(instructions);
      else expect((body.messages as Json[])[0]).toEqual({ role: "system", content: instructions });
    });

    it("streams events in order, numbered from 0, whose final response has the non-streamed text", async () => {
      const whole = await client.responses.create({ model, input: "hi" });
      const stream = client.responses.stream({ model, input: "hi" });
      const events: OpenAI.Responses.ResponseStreamEvent[] = [];
      for await (const event of stream) events.push(event);
      const final = await stream.finalResponse();
      expect(final.output_text).toBe(whole.output_text);
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      const types = events.map((e) => e.type);
      expect(types.slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
      expect(types[types.length - 1]).toBe("response.completed");
      for (
        const type of [
          "response.output_item.added",
          "response.content_part.added",
          "response.output_text.delta",
          "response.output_text.done",
          "response.content_part.done",
          "response.output_item.done",
        ]
      ) {
        expect(types).toContain(type);
      }
      expect(final.usage).toMatchObject({ input_tokens: usage.input, output_tokens: usage.output });
    });

    it("makes a function-call round trip over previous_response_id", async () => {
      const ask = `weather in Paris? [tool] ${model} ${store}`;
      const call = await client.responses.create({ model, input: ask, tools: [WEATHER_TOOL] });
      const fn = call.output.find((item) => item.type === "function_call");
      expect(fn).toMatchObject({ type: "function_call", name: "get_weather" });
      if (fn?.type !== "function_call") throw new Error("no function call");
      expect(JSON.parse(fn.arguments)).toMatchObject({ city: "Paris" });
      const before = llm.received.length;
      const result = await client.responses.create({
        model,
        previous_response_id: call.id,
        input: [{ type: "function_call_output", call_id: fn.call_id, output: "sunny" }],
        tools: [WEATHER_TOOL],
      });
      expect(result.output_text).toBe("result: sunny");
      expect(result.previous_response_id).toBe(call.id);
      if (model === "resp-native") {
        expect(native.received[native.received.length - 1].body).toMatchObject({ previous_response_id: call.id });
        return;
      }
      // The second backend request carries the whole conversation: the question, the call, its result.
      const sent = llm.received.slice(before).map((r) => r.body as Json);
      expect(sent).toHaveLength(1);
      const messages = sent[0].messages as Json[];
      if (model === "resp-chat") {
        expect(messages).toEqual([
          { role: "user", content: ask },
          {
            role: "assistant",
            content: "Let me look.",
            tool_calls: [{ id: fn.call_id, type: "function", function: { name: "get_weather", arguments: fn.arguments } }],
          },
          { role: "tool", tool_call_id: fn.call_id, content: "sunny" },
        ]);
      } else {
        expect(messages).toHaveLength(3);
        expect(messages[0]).toMatchObject({ role: "user" });
        expect(JSON.stringify(messages[0])).toContain(ask);
        expect(messages[1]).toMatchObject({ role: "assistant" });
        expect(messages[1].content).toEqual(expect.arrayContaining([expect.objectContaining({ type: "tool_use", id: fn.call_id, name: "get_weather" })]));
        expect(messages[2]).toMatchObject({ role: "user", content: [{ type: "tool_result", tool_use_id: fn.call_id, content: "sunny" }] });
      }
    });

    it("retrieves a stored response and its input items, deletes it, then answers 404", async () => {
      const created = await client.responses.create({ model, input: "hi" });
      expect(await client.responses.retrieve(created.id)).toEqual(JSON.parse(JSON.stringify(created)));
      const items = await client.responses.inputItems.list(created.id);
      expect(items.data).toHaveLength(1);
      expect(items.data[0]).toMatchObject({ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] });
      const deleted = await fetch(`${gw.url}/v1/responses/${created.id}`, { method: "DELETE", headers: { "x-consumer": `ann-${store}` } });
      expect(await deleted.json()).toEqual({ id: created.id, object: "response", deleted: true });
      await expect(client.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    });

    it("hides a response from another consumer: retrieve and previous_response_id are 404s", async () => {
      const created = await client.responses.create({ model, input: "hi" });
      const other = clientOf(`bob-${store}`);
      await expect(other.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(other.responses.delete(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(other.responses.create({ model, input: "again", previous_response_id: created.id })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      expect((await client.responses.retrieve(created.id)).id).toBe(created.id);
    });

    it("keeps nothing with store: false, so a later previous_response_id to it is a 404", async () => {
      const created = await client.responses.create({ model, input: "hi", store: false });
      expect(created).toMatchObject({ store: false });
      await expect(client.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
      await expect(client.responses.create({ model, input: "again", previous_response_id: created.id })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    });

    it("counts the usage of answers and streams in /usage and svc_llm_tokens_total", async () => {
      const consumer = `usage-${model}-${store}`;
      const counted = clientOf(consumer);
      const labels = { model, type: "prompt" };
      const prompt = await metric(gw, "svc_llm_tokens_total", labels);
      await counted.responses.create({ model, input: "hi" });
      await counted.responses.stream({ model, input: "hi" }).finalResponse();
      const view = async () => {
        const answer = await fetch(`${gw.url}/usage`, { headers: { "x-consumer": consumer } });
        return ((await answer.json()) as {
          usage: Array<{ service_type: string; total: { requests?: number; tokens?: { prompt: number; completion: number } } }>;
        }).usage;
      };
      // The stream's tokens are counted as it ends, which may be just after the client has its last event.
      const deadline = Date.now() + 10_000;
      let total = (await view()).find((u) => u.service_type === "chat")?.total;
      while (total?.tokens?.prompt !== 2 * usage.input && Date.now() < deadline) {
        await new Promise((resolve) => setImmediate(resolve));
        total = (await view()).find((u) => u.service_type === "chat")?.total;
      }
      expect(total).toMatchObject({ requests: 2, tokens: { prompt: 2 * usage.input, completion: 2 * usage.output } });
      expect(await metric(gw, "svc_llm_tokens_total", labels)).toBe(prompt + 2 * usage.input);
      const day = new Date().toISOString().slice(0, 10);
      const report = await fetch(`${gw.url}/-/usage/report?type=chat&period=daily&from=${day}&to=${day}&group_by=consumer`);
      expect(report.status).toBe(200);
      const { groups } = (await report.json()) as { groups: Json[] };
      expect(groups.find((group) => group.key === consumer)).toMatchObject({ requests: 2, tokens: 2 * (usage.input + usage.output) });
    });

    it.each(["cut", "reset", "stall"])("ends a %s stream with an error event and response.failed, never response.completed", async (fault) => {
      const response = await fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-consumer": `ann-${store}` },
        body: JSON.stringify({ model, stream: true, input: `[${fault}]` }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      const events = sseEvents(await response.text());
      const types = events.map((e) => e.event);
      expect(types).not.toContain("response.completed");
      expect(types.slice(-2)).toEqual(["error", "response.failed"]);
      expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
      expect(events[events.length - 1].data).toMatchObject({ type: "response.failed", response: { status: "failed" } });
    });
  });

  it.each([
    [{ input: "hi" }, 400, 'set "model"'],
    [{ model: "resp-chat", input: 42 }, 400, '"input" must be a string or an array of input items'],
    [{ model: "resp-chat", input: [{ type: "telepathy", content: "hi" }] }, 400, 'an item of type "telepathy" is not a Responses input item'],
    [{ model: "resp-chat", input: [{ role: "narrator", content: "hi" }] }, 400, "input[0].role must be one of"],
    [{ model: "resp-chat", input: "hi", previous_response_id: "resp_missing" }, 404, "Previous response with id 'resp_missing' not found."],
    [{ model: "resp-native", input: "hi", previous_response_id: "resp_missing" }, 404, "Previous response with id 'resp_missing' not found."],
  ])("refuses %j with %i in the OpenAI error shape, sending nothing to the backend", async (body, status, message) => {
    const sent = llm.received.length + native.received.length;
    const response = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-consumer": `ann-${store}` },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(status);
    const answer = (await response.json()) as { error: Json };
    expect(answer.error).toMatchObject({ message: expect.stringContaining(message), type: expect.any(String), code: expect.any(String) });
    expect(llm.received.length + native.received.length).toBe(sent);
  });

  it("counts input tokens on a native backend and a Messages-style one, and answers 501 where the backend cannot count", async () => {
    const counted = await client.responses.inputTokens.count({ model: "resp-native", input: "one two three" });
    expect(counted).toEqual({ object: "response.input_tokens", input_tokens: 6 });
    const before = llm.calls("/v1/messages/count_tokens").length;
    const messages = await client.responses.inputTokens.count({ model: "resp-messages", instructions: "Be brief.", input: `count me ${store}` });
    expect(messages).toEqual({ object: "response.input_tokens", input_tokens: MESSAGES_USAGE.input_tokens });
    const sent = llm.calls("/v1/messages/count_tokens").slice(before);
    expect(sent).toHaveLength(1);
    expect(sent[0].body).toEqual({ model: "resp-messages", system: "Be brief.", messages: [{ role: "user", content: `count me ${store}` }] });
    const refused = await fetch(`${gw.url}/v1/responses/input_tokens`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "resp-chat", input: "hi" }),
    });
    expect(refused.status).toBe(501);
    expect(((await refused.json()) as { error: Json }).error).toMatchObject({
      message: expect.stringContaining("cannot count input tokens"),
      code: "not_implemented",
    });
  });

  it("documents the Responses routes in the API document", async () => {
    const lines = (await (await fetch(`${gw.url}/openapi.yaml`)).text()).split("\n").map((line) => line.trim().replace(/["']/g, ""));
    for (const path of ["/v1/responses", "/v1/responses/{id}", "/v1/responses/{id}/input_items", "/v1/responses/input_tokens"]) {
      expect(lines).toContain(`${path}:`);
    }
  });

  it.runIf(store === "redis")("keeps stored responses encrypted at rest", async () => {
    const created = await client.responses.create({ model: "resp-chat", input: "a secret about Paris" });
    const redis = createClient({ url: inject("redisUrl"), database: DB });
    await redis.connect();
    try {
      const keys: string[] = [];
      for await (const found of redis.scanIterator({ MATCH: `*${created.id}*` })) keys.push(...(Array.isArray(found) ? found : [found]));
      expect(keys).toHaveLength(1);
      const value = await redis.get(keys[0]);
      expect(value?.startsWith("v1:")).toBe(true);
      expect(value).not.toContain("Paris");
    } finally {
      await redis.close();
    }
    expect((await client.responses.retrieve(created.id)).output_text).toBe("echo: a secret about Paris");
  });
});
