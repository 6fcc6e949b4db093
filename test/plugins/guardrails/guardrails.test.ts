/**
 * Guardrails as clients meet them, through the official `openai` and `@anthropic-ai/sdk`
 * clients on an in-process gateway (every built-in plugin, the memory store), in front of a
 * fake Chat Completions backend and a fake checker (the injected fetch): an input block (400,
 * the typed error, the backend got nothing), an input mask (the backend got `[EMAIL]`), an
 * output mask on a whole answer and on a stream with the value split over two events, an
 * output block mid-stream ending with the protocol's error event, and an http checker that
 * blocks, and that times out with `failure: open` (passes, the error counted) and `closed`
 * (refused, saying why). `/v1/messages` and `/v1/responses` requests are translated to chat
 * completions inside the gateway, so the same rules apply, answered in each protocol's shape.
 * A blocked request shows in its consumer's usage record as `outcomes.guardrail_blocked`, not as
 * a served request, a blocked answer's tokens and cost still counted.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStores } from "../../../adapters/stores.ts";
import { Gateway } from "../../../core/gateway.ts";
import { silentLogger } from "../../../core/log.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { type FakeUpstream, fakeUpstream } from "./fake-backend.ts";
import { metricSum } from "../../support/prometheus.ts";

const SERVICE = (model: string) =>
  `  - { type: chat, model: ${model}, provider: chat_completions, inference_url: "http://backend", operations: { chat: [/v1/chat/completions], messages: [/v1/messages], responses: [/v1/responses] } }`;

const CONFIG = `
server: { consumer_header: x-consumer }
guardrails:
  - { name: no-codenames, kind: regex, on: [input], action: block, patterns: ["PROJECT-[0-9]+"] }
  - { name: pii-in, kind: pii, on: [input], action: mask, entities: [email, credit_card] }
  - { name: pii-out, kind: pii, on: [output], action: mask, entities: [email], models: [gpt] }
  - { name: no-forbidden-out, kind: regex, on: [output], action: block, patterns: ["FORBIDDEN"], models: [gpt] }
  - { name: phones-out, kind: pii, on: [output], action: mask, entities: [phone], models: [gpt-phone] }
  - { name: moderation, kind: http, on: [input], action: block, url: "http://checker/block", models: [mod-block] }
  - { name: moderation-open, kind: http, on: [input], action: block, url: "http://checker/hang", timeout: 50ms, failure: open, models: [mod-open] }
  - { name: moderation-closed, kind: http, on: [input], action: block, url: "http://checker/hang", timeout: 50ms, failure: closed, models: [mod-closed] }
services:
${["gpt", "gpt-phone", "mod-block", "mod-open", "mod-closed"].map(SERVICE).join("\n")}
pricing:
  currency: USD
  models:
    gpt: { input: 1, output: 2 }
`;

/** The sum of a series' samples whose labels include `labels` (test/support/prometheus.ts). */
async function metric(gateway: Gateway, name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await (await gateway.fetch(new Request("http://gateway/metrics"))).text(), name, labels);
}

describe("guardrails through the official clients", () => {
  let gateway: Gateway;
  let upstream: FakeUpstream;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let viaGateway: typeof fetch;

  beforeAll(async () => {
    upstream = fakeUpstream();
    gateway = await Gateway.create({
      readConfig: async () => CONFIG,
      env: {},
      importModule: async (specifier) => {
        throw new Error(`no module ${specifier}`);
      },
      openStores,
      plugins: builtinPlugins,
      log: silentLogger,
      fetch: upstream.fetch,
      lookupHost: async () => ["127.0.0.1"],
    });
    viaGateway = ((input: RequestInfo | URL, init?: RequestInit) => gateway.fetch(new Request(input, init))) as typeof fetch;
    openai = new OpenAI({ baseURL: "http://gateway/v1", apiKey: "test-key", fetch: viaGateway, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: "http://gateway", apiKey: "test-key", fetch: viaGateway, maxRetries: 0 });
  });
  afterAll(async () => await gateway?.close());

  /** Bodies the backend got whose messages mention `marker`. */
  const receivedWith = (marker: string) => upstream.received.filter((body) => JSON.stringify(body).includes(marker));

  describe("the Responses API (openai)", () => {
    it("an input block: 400 in OpenAI's error shape, the rule's name as code, and the backend got nothing", async () => {
      const error = await openai.responses.create({ model: "gpt", input: "status of PROJECT-42? r1" }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error).toMatchObject({ type: "guardrail_blocked", code: "no-codenames" });
      expect(receivedWith("r1")).toHaveLength(0);
    });

    it("an input mask, instructions included: the backend gets [EMAIL]", async () => {
      await openai.responses.create({ model: "gpt", instructions: "r2 answer dan@example.com", input: "r2 mail ann@example.com" });
      const [sent] = receivedWith("r2");
      expect(JSON.stringify(sent)).toContain("r2 mail [EMAIL]");
      expect(JSON.stringify(sent)).toContain("r2 answer [EMAIL]");
      expect(JSON.stringify(sent)).not.toContain("@example.com");
    });

    it("an output mask on a whole answer and on a stream whose address is split over two events", async () => {
      const whole = await openai.responses.create({ model: "gpt", input: "r3 [answer:write to bob(at)example.org today]" });
      expect(whole.output_text).toBe("write to [EMAIL] today");
      const stream = openai.responses.stream({ model: "gpt", input: "r4 [parts:reach me at carol@exa|mple.com or |not at all]" });
      const final = await stream.finalResponse();
      expect(final.output_text).toBe("reach me at [EMAIL] or not at all");
    });

    it("an output block mid-stream ends with response.failed, the matched text never sent", async () => {
      const response = await gateway.fetch(
        new Request("http://gateway/v1/responses", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt", stream: true, input: "r5 [parts:all fine |so far, FORBI|DDEN stuff|more]" }),
        }),
      );
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text).not.toContain("FORBI");
      expect(text).not.toContain("response.completed");
      const events = text.trim().split("\n\n").map((block) => /^event: (.+)$/m.exec(block)?.[1]);
      expect(events[events.length - 1]).toBe("response.failed");
      expect(text).toContain("no-forbidden-out");
    });
  });

  describe("chat completions (openai)", () => {
    it("an input block: 400 guardrail_blocked with the rule's name as code, and the backend got nothing", async () => {
      const error = await openai.chat.completions.create({ model: "gpt", messages: [{ role: "user", content: "status of PROJECT-42? c1" }] }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ type: "guardrail_blocked", code: "no-codenames" });
      expect(error.error.message).toContain('guardrail "no-codenames" refused the request');
      expect(error.error.message).not.toContain("PROJECT-42");
      expect(receivedWith("c1")).toHaveLength(0);
    });

    it("an input mask: the backend gets [EMAIL] where the prompt had an address", async () => {
      await openai.chat.completions.create({ model: "gpt", messages: [{ role: "user", content: "c2 mail ann@example.com the card 4111 1111 1111 1111" }] });
      const [sent] = receivedWith("c2");
      expect(JSON.stringify(sent)).toContain("c2 mail [EMAIL] the card [CREDIT_CARD]");
      expect(JSON.stringify(sent)).not.toContain("ann@example.com");
    });

    it("a field twice in a message is refused: the rules read the last, a backend's parser may read the first", async () => {
      const body = '{"model":"gpt","messages":[{"role":"user","content":"c-dup mail ann@example.com","content":"c-dup hello"}]}';
      const response = await viaGateway("http://gateway/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body });
      expect(response.status).toBe(400);
      const { error } = await response.json();
      expect(error.type).toBe("invalid_request_error");
      expect(error.message).toContain('the JSON body has the field "content" more than once in one object');
      expect(receivedWith("c-dup")).toHaveLength(0);
    });

    it("an output mask on a whole answer", async () => {
      const answer = await openai.chat.completions.create({
        model: "gpt",
        messages: [{ role: "user", content: "c3 [answer:write to bob(at)example.org today]" }],
      });
      expect(answer.choices[0].message.content).toBe("write to [EMAIL] today");
      expect(answer.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 7 });
    });

    it("an output mask on a stream whose address is split over two events", async () => {
      const stream = await openai.chat.completions.create({
        model: "gpt",
        stream: true,
        messages: [{ role: "user", content: "c4 [parts:reach me at carol@exa|mple.com or |not at all]" }],
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      expect(text).toBe("reach me at [EMAIL] or not at all");
    });

    it("an output block mid-stream: the matched text never arrives and the stream ends with an error event", async () => {
      const response = await gateway.fetch(
        new Request("http://gateway/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt", stream: true, messages: [{ role: "user", content: "c5 [parts:all fine |so far, FORBI|DDEN stuff|more]" }] }),
        }),
      );
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text).not.toContain("FORBI");
      expect(text).not.toContain("[DONE]");
      const last = text.trim().split("\n\n").pop()!;
      expect(JSON.parse(last.slice("data: ".length))).toEqual({
        error: { message: expect.stringContaining('guardrail "no-forbidden-out" refused the answer'), type: "guardrail_blocked", code: "no-forbidden-out" },
      });
      // The official client raises it.
      const stream = await openai.chat.completions.create({ model: "gpt", stream: true, messages: [{ role: "user", content: "c5b [parts:ok |FORBIDDEN]" }] });
      const failure = await (async () => {
        for await (const _ of stream) { /* reading */ }
      })().catch((e) => e);
      expect(failure).toBeInstanceOf(OpenAI.APIError);
      expect(String(failure.message)).toContain("no-forbidden-out");
    });

    it("a pii rule on a stream holds back no more than its entities can span, not the whole window", async () => {
      const response = await gateway.fetch(
        new Request("http://gateway/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "gpt-phone",
            stream: true,
            messages: [{ role: "user", content: "c9 [parts:the first part of a fairly long answer here, |call +1 555 123 |4567 now]" }],
          }),
        }),
      );
      const contents = (await response.text())
        .split("\n\n")
        .filter((block) => block.startsWith("data: {"))
        .map((block) => (JSON.parse(block.slice(6)) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? "")
        .filter((content) => content !== "");
      expect(contents.join("")).toBe("the first part of a fairly long answer here, call [PHONE] now");
      // A phone number spans at most 19 characters: the first event's text went out before the
      // stream's end, less what a number starting there could still need (not the 256 of the window).
      expect(contents.length).toBeGreaterThan(1);
      expect(contents[0].startsWith("the first part")).toBe(true);
    });

    it("an http checker that blocks", async () => {
      const error = await openai.chat.completions.create({ model: "mod-block", messages: [{ role: "user", content: "c6 hello" }] }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error).toMatchObject({ type: "guardrail_blocked", code: "moderation" });
      expect(error.error.message).toContain("the moderation service flagged it");
      expect(upstream.checked.find((body) => JSON.stringify(body).includes("c6"))).toMatchObject({ stage: "input", model: "mod-block", consumer: "" });
      expect(receivedWith("c6")).toHaveLength(0);
    });

    it("an http checker that times out with failure: open lets the request pass and counts the error", async () => {
      const before = await metric(gateway, "svc_guardrail_errors_total", { guardrail: "moderation-open" });
      const answer = await openai.chat.completions.create({ model: "mod-open", messages: [{ role: "user", content: "c7 hello" }] });
      expect(answer.choices[0].message.content).toBe("echo");
      expect(await metric(gateway, "svc_guardrail_errors_total", { guardrail: "moderation-open" })).toBe(before + 1);
    });

    it("an http checker that times out with failure: closed refuses the request, saying why", async () => {
      const error = await openai.chat.completions.create({ model: "mod-closed", messages: [{ role: "user", content: "c8 hello" }] }).catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.error).toMatchObject({ type: "guardrail_blocked", code: "moderation-closed" });
      expect(error.error.message).toContain("did not answer within 50 ms");
      expect(error.error.message).toContain('"closed"');
      expect(receivedWith("c8")).toHaveLength(0);
    });

    it("counts what the rules did", async () => {
      expect(await metric(gateway, "svc_guardrail_actions_total", { guardrail: "no-codenames", stage: "input", action: "block" })).toBeGreaterThanOrEqual(1);
      expect(await metric(gateway, "svc_guardrail_actions_total", { guardrail: "pii-in", stage: "input", action: "mask" })).toBeGreaterThanOrEqual(1);
      expect(await metric(gateway, "svc_guardrail_actions_total", { guardrail: "pii-out", stage: "output", action: "mask" })).toBeGreaterThanOrEqual(2);
    });
  });

  describe("blocked requests in the consumer's usage record", () => {
    const clientOf = (consumer: string) =>
      new OpenAI({ baseURL: "http://gateway/v1", apiKey: "test-key", fetch: viaGateway, maxRetries: 0, defaultHeaders: { "x-consumer": consumer } });
    /** The consumer's `total` of the chat type (`GET /usage`). */
    const chatTotal = async (consumer: string) => {
      const response = await gateway.fetch(new Request("http://gateway/usage", { headers: { "x-consumer": consumer } }));
      expect(response.status).toBe(200);
      const record = (await response.json()) as { usage: Array<{ service_type: string; total: unknown }> };
      return record.usage.find((entry) => entry.service_type === "chat")?.total;
    };
    const ask = (consumer: string, model: string, content: string) =>
      clientOf(consumer).chat.completions.create({ model, messages: [{ role: "user", content }] });

    it("input blocks (a rule's and a checker's closed failure) count under outcomes, not as served requests", async () => {
      await ask("u-input", "gpt", "u1 hello");
      const blocked = await ask("u-input", "gpt", "u1 PROJECT-9").catch((e) => e);
      expect(blocked).toBeInstanceOf(OpenAI.BadRequestError);
      expect(blocked.error).toMatchObject({ type: "guardrail_blocked", code: "no-codenames" });
      const closed = await ask("u-input", "mod-closed", "u1 hi").catch((e) => e);
      expect(closed.error).toMatchObject({ type: "guardrail_blocked", code: "moderation-closed" });
      expect(await chatTotal("u-input")).toEqual({
        requests: 1,
        tokens: { prompt: 11, completion: 7 },
        cost: 0.000025,
        outcomes: { guardrail_blocked: 2 },
      });
    });

    it("an output block on a whole answer: counted under outcomes, the backend's tokens and cost still counted", async () => {
      const blocked = await ask("u-answer", "gpt", "u2 [answer:here is FORBIDDEN text]").catch((e) => e);
      expect(blocked).toBeInstanceOf(OpenAI.BadRequestError);
      expect(blocked.error).toMatchObject({ type: "guardrail_blocked", code: "no-forbidden-out" });
      expect(JSON.stringify(blocked.error)).not.toContain("FORBIDDEN text");
      expect(receivedWith("u2")).toHaveLength(1);
      expect(await chatTotal("u-answer")).toEqual({
        requests: 0,
        tokens: { prompt: 11, completion: 7 },
        cost: 0.000025,
        outcomes: { guardrail_blocked: 1 },
      });
    });

    it("an output block mid-stream, after its 200: counted under outcomes, not as a served request", async () => {
      const response = await gateway.fetch(
        new Request("http://gateway/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json", "x-consumer": "u-stream" },
          body: JSON.stringify({ model: "gpt", stream: true, messages: [{ role: "user", content: "u3 [parts:all fine |FORBIDDEN|more]" }] }),
        }),
      );
      expect(response.status).toBe(200);
      // The whole answer, to its close: the usage write comes before it.
      expect(await response.text()).toContain('"code":"no-forbidden-out"');
      expect(await chatTotal("u-stream")).toEqual({ requests: 0, tokens: { prompt: 0, completion: 0 }, cost: 0, outcomes: { guardrail_blocked: 1 } });
      // A stream that passes is a served request, with no outcome.
      const passed = await gateway.fetch(
        new Request("http://gateway/v1/chat/completions", {
          method: "POST",
          headers: { "content-type": "application/json", "x-consumer": "u-stream" },
          body: JSON.stringify({ model: "gpt", stream: true, messages: [{ role: "user", content: "u3 [parts:all |fine]" }] }),
        }),
      );
      expect(await passed.text()).toContain("[DONE]");
      expect(await chatTotal("u-stream")).toEqual({ requests: 1, tokens: { prompt: 0, completion: 0 }, cost: 0, outcomes: { guardrail_blocked: 1 } });
    });

    it("the report shows them in its buckets, total and groups", async () => {
      const today = new Date();
      const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      // From the day before: a write just before midnight (UTC) is in the range too.
      const query = `type=chat&period=daily&from=${day(today.getTime() - 86_400_000)}&to=${day(today.getTime())}&total=true&group_by=consumer`;
      const response = await gateway.fetch(new Request(`http://gateway/-/usage/report?${query}`));
      expect(response.status).toBe(200);
      const report = (await response.json()) as {
        buckets: Array<{ outcomes?: Record<string, number> }>;
        total: { outcomes?: Record<string, number> };
        groups: Array<{ key: string; requests: number; outcomes?: Record<string, number> }>;
      };
      expect(report.total.outcomes).toEqual({ guardrail_blocked: 4 });
      expect(report.buckets.reduce((sum, bucket) => sum + (bucket.outcomes?.guardrail_blocked ?? 0), 0)).toBe(4);
      const groups = Object.fromEntries(report.groups.map((group) => [group.key, group]));
      expect(groups["u-input"]).toMatchObject({ requests: 1, outcomes: { guardrail_blocked: 2 } });
      expect(groups["u-answer"]).toMatchObject({ requests: 0, tokens: 18, outcomes: { guardrail_blocked: 1 } });
      expect(groups["u-stream"]).toMatchObject({ requests: 1, outcomes: { guardrail_blocked: 1 } });
    });
  });

  describe("/v1/messages (@anthropic-ai/sdk)", () => {
    it("an input block: 400 in Anthropic's error shape, the rule's name as code, and the backend got nothing", async () => {
      const error = await anthropic.messages.create({ model: "gpt", max_tokens: 64, messages: [{ role: "user", content: "m1 PROJECT-7" }] }).catch((e) => e);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ type: "error", error: { type: "invalid_request_error", code: "no-codenames" } });
      expect(receivedWith("m1")).toHaveLength(0);
    });

    it("an input mask: the backend gets [EMAIL]", async () => {
      await anthropic.messages.create({ model: "gpt", max_tokens: 64, system: "m2 reply to dan@example.net", messages: [{ role: "user", content: "m2 hi" }] });
      const [sent] = receivedWith("m2");
      expect(JSON.stringify(sent)).toContain("m2 reply to [EMAIL]");
      expect(JSON.stringify(sent)).not.toContain("dan@example.net");
    });

    it("an output mask on a whole answer", async () => {
      const message = await anthropic.messages.create({
        model: "gpt",
        max_tokens: 64,
        messages: [{ role: "user", content: "m3 [answer:ask erin(at)example.com]" }],
      });
      expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "ask [EMAIL]" })]);
    });

    it("an output mask on a stream whose address is split over two events", async () => {
      const stream = anthropic.messages.stream({
        model: "gpt",
        max_tokens: 64,
        messages: [{ role: "user", content: "m4 [parts:write frank@exam|ple.com soon]" }],
      });
      const message = await stream.finalMessage();
      expect(message.content.map((block) => (block.type === "text" ? block.text : "")).join("")).toBe("write [EMAIL] soon");
    });

    it("an output block mid-stream ends with an error event the SDK raises", async () => {
      const stream = anthropic.messages.stream({ model: "gpt", max_tokens: 64, messages: [{ role: "user", content: "m5 [parts:fine |FORBIDDEN|after]" }] });
      const error = await stream.finalMessage().catch((e) => e);
      expect(error).toBeInstanceOf(Anthropic.APIError);
      expect(String(error.message)).toContain("no-forbidden-out");
      const response = await gateway.fetch(
        new Request("http://gateway/v1/messages", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt", max_tokens: 64, stream: true, messages: [{ role: "user", content: "m5b [parts:fine |FORBIDDEN]" }] }),
        }),
      );
      const text = await response.text();
      expect(text).not.toContain("FORBIDDEN");
      expect(text).not.toContain("message_stop");
      const last = text.trim().split("\n\n").pop()!.split("\n");
      expect(last[0]).toBe("event: error");
      expect(JSON.parse(last[1].slice("data: ".length))).toEqual({
        type: "error",
        error: { type: "invalid_request_error", message: expect.stringContaining('guardrail "no-forbidden-out" refused the answer'), code: "no-forbidden-out" },
      });
    });

    it("http checkers: a block, and a timeout with failure open (passes) and closed (refused)", async () => {
      const blocked = await anthropic.messages.create({ model: "mod-block", max_tokens: 64, messages: [{ role: "user", content: "m6" }] }).catch((e) => e);
      expect(blocked).toBeInstanceOf(Anthropic.BadRequestError);
      expect(blocked.error.error).toMatchObject({ code: "moderation" });
      const before = await metric(gateway, "svc_guardrail_errors_total", { guardrail: "moderation-open" });
      const passed = await anthropic.messages.create({ model: "mod-open", max_tokens: 64, messages: [{ role: "user", content: "m7" }] });
      expect(passed.content[0]).toMatchObject({ type: "text", text: "echo" });
      expect(await metric(gateway, "svc_guardrail_errors_total", { guardrail: "moderation-open" })).toBe(before + 1);
      const closed = await anthropic.messages.create({ model: "mod-closed", max_tokens: 64, messages: [{ role: "user", content: "m8" }] }).catch((e) => e);
      expect(closed).toBeInstanceOf(Anthropic.BadRequestError);
      expect(closed.error.error).toMatchObject({ code: "moderation-closed", message: expect.stringContaining("did not answer within 50 ms") });
    });
  });
});
