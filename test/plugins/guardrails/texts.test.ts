/**
 * The texts of a chat-completions body and a copy with them replaced: message contents, text
 * parts, tool call arguments; the body the copy was made from stays as it was.
 */
import { describe, expect, it } from "vitest";
import type { Logger } from "../../../core/log.ts";
import { changedBodyJson } from "../../../core/llm/json-text.ts";
import type { JsonObject } from "../../../core/llm/json.ts";
import { Metrics } from "../../../core/metrics.ts";
import type { RequestContext } from "../../../core/pipeline/context.ts";
import { parseJsonBytes } from "../../../core/request-body/json-body.ts";
import { guardrailsHook } from "../../../plugins/guardrails/guard.ts";
import { guardrailMetrics } from "../../../plugins/guardrails/metrics.ts";
import { compileRules } from "../../../plugins/guardrails/rules.ts";
import { answerTexts, requestTexts } from "../../../plugins/guardrails/texts.ts";

describe("request texts", () => {
  const body = (user = "hi ann@example.com", args = '{"to":"ann@example.com"}') => ({
    model: "gpt",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: user }, { type: "image_url", image_url: { url: "data:x" } }] },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: args } }] },
    ],
    tools: [{ type: "function", function: { name: "f" } }],
  });

  it("reads contents, text parts and tool call arguments, in order", () => {
    expect(requestTexts(body()).texts).toEqual(["be brief", "hi ann@example.com", '{"to":"ann@example.com"}']);
  });

  it("writes a copy with the new texts and leaves the body as it was", () => {
    const original = body();
    const texts = requestTexts(original);
    const copy = texts.write(["be brief", "hi [EMAIL]", '{"to":"[EMAIL]"}']);
    expect(copy).toEqual(body("hi [EMAIL]", '{"to":"[EMAIL]"}'));
    expect(original).toEqual(body());
    expect(requestTexts(copy).texts).toEqual(["be brief", "hi [EMAIL]", '{"to":"[EMAIL]"}']);
  });
});

describe("answer texts", () => {
  it("reads and replaces message contents and completion texts", () => {
    const answer = { choices: [{ index: 0, message: { role: "assistant", content: "mail ann@example.com" } }, { index: 1, text: "plain" }] };
    const texts = answerTexts(answer);
    expect(texts.texts).toEqual(["mail ann@example.com", "plain"]);
    expect(texts.write(["mail [EMAIL]", "plain"])).toEqual({
      choices: [{ index: 0, message: { role: "assistant", content: "mail [EMAIL]" } }, { index: 1, text: "plain" }],
    });
    expect(answer.choices[0].message?.content).toBe("mail ann@example.com");
  });
});

describe("a masked body written again (core/llm/json-text.ts)", () => {
  const rule = (name: string, patterns: string[], maskWith?: string) => ({
    name,
    kind: "regex" as const,
    on: ["input" as const],
    action: "mask" as const,
    patterns,
    ...(maskWith === undefined ? {} : { mask_with: maskWith }),
    models: ["*"],
    consumers: ["*"],
    user_types: ["*"],
    stream_window: 256,
    stream_check_every: 500,
  });
  const masks = async (rules: ReturnType<typeof rule>[], content: string) => {
    const log = { info() {}, warn() {}, error() {}, debug() {}, child: () => log } as unknown as Logger;
    const hook = guardrailsHook(compileRules(rules, new Map(), fetch), { metrics: guardrailMetrics(new Metrics()), log, ids: { newId: () => "id" } });
    const parsed = parseJsonBytes(new TextEncoder().encode(JSON.stringify({ model: "m", messages: [{ role: "user", content }] })));
    if (!parsed.ok) throw new Error(parsed.message);
    const original = { value: parsed.json.value as JsonObject, escapeFree: parsed.json.escapeFree };
    const ctx = { principal: { consumer: "c" }, request: new Request("http://gateway/"), outcome: undefined } as unknown as RequestContext;
    const changed = await hook.open({ ctx, model: "m", stream: false })!.input!(original.value);
    return { original, changed: changed! };
  };
  const prompt = "Reach ann@example.com about the refund of the order 😀. ".repeat(40);

  it("is JSON.stringify's text whether the masks need escapes or not", async () => {
    for (const maskWith of ["[EMAIL]", 'the "address"', "line\nbreak"]) {
      const { original, changed } = await masks([rule("emails", ["[a-z]+@example\\.com"], maskWith)], prompt);
      expect(original.escapeFree).toBe(true);
      expect(changedBodyJson(changed, original)).toBe(JSON.stringify(changed));
      expect(JSON.parse(changedBodyJson(changed, original)).messages[0].content).toContain(maskWith);
    }
  });

  it("is JSON.stringify's text when a pattern masks half of a surrogate pair (its other half is escaped)", async () => {
    const { original, changed } = await masks([rule("half", ["\\ude00"], "[X]")], prompt);
    expect(JSON.stringify(changed)).toContain("\\ud83d[X]");
    expect(changedBodyJson(changed, original)).toBe(JSON.stringify(changed));
  });
});
