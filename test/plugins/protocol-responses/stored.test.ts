/**
 * Stored responses in-process, on the memory store driven by a manual clock: a response is
 * kept for `responses.store_ttl` and is a 404 after it (retrieve, and as a
 * `previous_response_id`, nothing sent); the span takes days or a duration, and anything else
 * is a config problem naming the key.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const completion = JSON.stringify({
  id: "c",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});

const config = (ttl: string) => `
responses:
  store_ttl: ${ttl}
services:
  - { type: chat, model: chatty, provider: chat_completions, inference_url: "http://chat.test", operations: { responses: [/v1/responses] } }
`;

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

describe("stored responses", () => {
  it("keeps a response for responses.store_ttl, then answers 404 for it", async () => {
    const clock = new ManualClock();
    let sent = 0;
    const fakeFetch: typeof fetch = () => {
      sent++;
      return Promise.resolve(new Response(completion, { headers: { "content-type": "application/json" } }));
    };
    const runtime = await startTestRuntime(config("1h"), builtinPlugins, { clock, fetch: fakeFetch });
    runtimes.push(runtime);
    const create = (body: Record<string, unknown>) =>
      runtime.request("/v1/responses", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "chatty", ...body }) });
    const created = (await (await create({ input: "hi" })).json()) as { id: string; created_at: number };
    expect(created.created_at).toBe(Math.floor(clock.now() / 1000));
    expect((await runtime.request(`/v1/responses/${created.id}`)).status).toBe(200);

    clock.advance(3_600_000 - 1);
    expect((await runtime.request(`/v1/responses/${created.id}`)).status).toBe(200);
    clock.advance(2);
    expect((await runtime.request(`/v1/responses/${created.id}`)).status).toBe(404);
    const before = sent;
    const continued = await create({ input: "again", previous_response_id: created.id });
    expect(continued.status).toBe(404);
    expect(sent).toBe(before);
  });

  it.each(["30d", "720h", "90m"])("takes %s as the span", (ttl) => {
    expect(() => loadConfig(config(ttl), {}, [])).not.toThrow();
  });

  it.each([["bogus", 'responses.store_ttl: "bogus" is not a duration'], ["0s", "responses.store_ttl: must be longer than 0"]])(
    "refuses %s naming the key",
    (ttl, problem) => {
      expect(() => loadConfig(config(ttl), {}, [])).toThrow(problem);
    },
  );
});
