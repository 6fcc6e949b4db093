/**
 * The texts of a chat-completions body and a copy with them replaced: message contents, text
 * parts, tool call arguments; the body the copy was made from stays as it was.
 */
import { describe, expect, it } from "vitest";
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
