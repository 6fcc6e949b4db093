/**
 * A stream through an output hook's filter (plugins/llm-proxy/hooks.ts `wrapChat`): the chunks
 * the filter reads as raw text still reach the provider's watch, so the end and the usage are
 * known, and the content chunks are parsed neither by the filter nor by the watch.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../core/log.ts";
import { SseParser } from "../../../core/llm/sse.ts";
import type { StreamEvent } from "../../../core/llm/events.ts";
import type { RequestContext } from "../../../core/pipeline/context.ts";
import { guardrailsHook } from "../../../plugins/guardrails/guard.ts";
import { RequestHooks } from "../../../plugins/llm-proxy/hooks.ts";
import { watchingTranslator } from "../../../plugins/provider-chat-completions/hosts.ts";
import { compiledRules } from "../../support/guardrail-rules.ts";

const chunk = (delta: string, finish = "null") =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]}\n\n`;

function maskedStream() {
  const rules = compiledRules([{ name: "mask-mail", kind: "pii", on: ["output"], action: "mask", entities: ["email"] }]);
  const hook = guardrailsHook(rules, { metrics: { action() {}, error() {} }, log: silentLogger, ids: { newId: () => "id" } });
  const ctx = { principal: { consumer: "c" }, request: new Request("http://test/") } as unknown as RequestContext;
  const hooks = new RequestHooks([hook.open({ ctx, model: "m", stream: true })!], true);
  return hooks.wrapChat(watchingTranslator(), true);
}

/** `events` through the translator; how many of them were parsed. */
function run(events: string[]) {
  const translator = maskedStream();
  const parser = new SseParser();
  const parsedEvents = new Set<StreamEvent>();
  const out: unknown[] = [];
  for (const text of events) {
    for (const event of parser.push(text)) {
      const watched = new Proxy(event, {
        get(target, key) {
          if (key === "json") parsedEvents.add(target);
          return Reflect.get(target, key, target) as unknown;
        },
      }) as StreamEvent;
      out.push(...translator.translateStreamEvent!(watched).map((e) => e.data));
    }
  }
  out.push(...translator.translateStreamEnd!().map((e) => e.data));
  return { translator, parsed: parsedEvents.size, out };
}

describe("a stream through an output mask", () => {
  it("knows its end and usage, and parses only the chunks that may carry them", () => {
    const content = ["Write to ann", "@example.com ", "today ", "please ", "thanks"];
    const { translator, parsed, out } = run([
      chunk('{"role":"assistant","content":""}'),
      ...content.map((piece) => chunk(`{"content":"${piece}"}`)),
      chunk("{}", '"stop"'),
      'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}\n\n',
      "data: [DONE]\n\n",
    ]);
    expect(translator.streamProgress!()).toMatchObject({ ended: true, usage: { prompt_tokens: 3, completion_tokens: 5 } });
    // The finish, the usage chunk and [DONE]: not the role and content chunks read as text.
    expect(parsed).toBeLessThanOrEqual(3);
    const text = out.map((data) => (typeof data === "string" ? data : JSON.stringify(data))).join("");
    expect(text).toContain("[EMAIL]");
    expect(text).not.toContain("ann@example.com");
  });
});
