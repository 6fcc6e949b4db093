import { describe, expect, it } from "vitest";
import { ChatStreamWatch } from "../../../core/llm/chat-stream-watch.ts";
import { SseParser } from "../../../core/llm/sse.ts";

/** The watch's progress after the SSE text `text`, events as the gateway's parser makes them. */
function watched(text: string) {
  const watch = new ChatStreamWatch();
  const parser = new SseParser();
  for (const event of [...parser.push(text), ...parser.end()]) watch.event(event);
  return watch.progress();
}

describe("ChatStreamWatch", () => {
  it("is not ended by deltas whose finish_reason is null, whatever their content says", () => {
    const content = JSON.stringify({ choices: [{ index: 0, delta: { content: 'say "finish_reason":"stop" and "usage"' }, finish_reason: null }] });
    expect(watched(`data: ${content}\n\n`)).toEqual({ ended: false, usage: undefined });
  });

  it("sees a finish reason, however the JSON is spaced", () => {
    expect(watched('data: {"choices":[{"index":0,"delta":{},"finish_reason" :  "stop"}]}\n\n').ended).toBe(true);
    // Multi-line data: the event's JSON has a line break between the key and its value.
    expect(watched('data: {\ndata: "choices":[{"finish_reason":\ndata: "length"}]}\n\n').ended).toBe(true);
  });

  it("sees the usage chunk, an error event and [DONE]", () => {
    expect(watched('data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}\n\n').usage).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
    expect(watched('data: {"error":{"message":"overloaded"}}\n\n').ended).toBe(true);
    expect(watched("data: [DONE]\n\n").ended).toBe(true);
  });
});
