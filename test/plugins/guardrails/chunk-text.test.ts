/**
 * An output mask reading a streamed chunk's raw text (plugins/guardrails/chunk-text.ts) instead
 * of parsing it: only chunks whose one `delta.content` is certain are read so, and a stream read
 * so gives the client exactly what the parsed way gives (the same chunks, the same text masked
 * and held back), whatever the chunks hold.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../../core/log.ts";
import { contentSpan } from "../../../plugins/guardrails/chunk-text.ts";
import { RequestRun } from "../../../plugins/guardrails/run.ts";
import { GuardedStream } from "../../../plugins/guardrails/stream-filter.ts";
import { compiledRules } from "../../support/guardrail-rules.ts";

const chunk = (delta: string, rest = ',"logprobs":null,"finish_reason":null') =>
  `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":${delta}${rest}}]}`;

const contentOf = (data: string) => {
  const span = contentSpan(data);
  return span && { index: span.index, content: JSON.parse(data.slice(span.start, span.end)) as unknown };
};

describe("contentSpan", () => {
  it("finds the one choice's content in compact chunks, escapes and all", () => {
    expect(contentOf(chunk('{"content":"Hello"}'))).toEqual({ index: 0, content: "Hello" });
    expect(contentOf(chunk('{"role":"assistant","content":""}'))).toEqual({ index: 0, content: "" });
    expect(contentOf(chunk('{"content":"a \\"quoted\\" \\\\ back\\\\slash \\u00e9 \\n line"}'))).toEqual({
      index: 0,
      content: 'a "quoted" \\ back\\slash \u00e9 \n line',
    });
    // Text that looks like the chunk's keys is escaped inside the string: still the one content.
    expect(contentOf(chunk('{"content":"\\"content\\":\\"x\\",\\"delta\\":{\\"index\\":1"}'))).toEqual({
      index: 0,
      content: '"content":"x","delta":{"index":1',
    });
    expect(contentOf(`{"choices":[{"index":12,"delta":{"content":"x"},"finish_reason":null}],"id":"c"}`)).toEqual({ index: 12, content: "x" });
  });

  it("leaves every chunk it cannot be sure of to be parsed", () => {
    const unsure = [
      // Spaced JSON, a finish reason, no finish reason at all, usage only.
      `{"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}]}`,
      chunk('{"content":"x"}', ',"finish_reason":"stop"'),
      chunk('{"content":"x"}', ""),
      '{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
      // Two choices; a second content (log probabilities); more in the delta; a null content.
      `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null},{"index":1,"delta":{"content":"b"},"finish_reason":null}]}`,
      chunk('{"content":"x"}', ',"logprobs":{"content":[{"token":"x"}]},"finish_reason":null'),
      chunk('{"content":"x","refusal":null}'),
      chunk('{"role":"user","content":"x"}'),
      chunk('{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}'),
      // Not JSON objects, or cut short.
      "[DONE]",
      chunk('{"content":"unterminated').slice(0, 120),
    ];
    for (const data of unsure) expect({ data, span: contentSpan(data) }).toEqual({ data, span: undefined });
  });
});

function guardedStream(action: "mask" | "block") {
  const rules = compiledRules([{ name: "no-mail", kind: "pii", on: ["output"], action, entities: ["email", "credit_card"] }]);
  const metrics = { action: () => {}, error: () => {} };
  const run = new RequestRun({ metrics, log: silentLogger }, () => "req-1", "m", "", { outcome: undefined });
  return new GuardedStream(run, rules, []);
}

/** What the client gets, as parsed chunks: every event parsed (`event`), or read as text where it can be (`eventText`). */
function through(stream: GuardedStream, events: readonly string[], readText: boolean): { out: unknown[]; readAsText: number } {
  const out: unknown[] = [];
  let readAsText = 0;
  for (const data of events) {
    const text = readText ? stream.eventText(data) : undefined;
    if (text !== undefined) {
      readAsText++;
      out.push(JSON.parse(text));
    } else out.push(...stream.event(data === "[DONE]" ? data : JSON.parse(data)));
  }
  out.push(...stream.end());
  return { out, readAsText };
}

describe("contentSpan against JSON.parse", () => {
  /** A seeded generator, so a failing case can be run again. */
  let seed = 46;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)];
  const BITS = [
    '"content":',
    '"content":"',
    '"delta":{',
    '"index":0,',
    '"finish_reason":',
    "null",
    '"',
    '\\"',
    "\\\\",
    "{",
    "}",
    ",",
    " ",
    '"role":"assistant",',
    "x",
    ":",
    "[",
    "]",
    "7",
  ];

  it("on 50,000 chunks, valid and mutated: every span it finds is the one choice's unfinished content, and it finds every compact one", () => {
    let found = 0;
    for (let i = 0; i < 50_000; i++) {
      // Contents as they stand between quotes in JSON: escapes, and text that looks like keys.
      const content = pick(["Hello", "", String.raw`say \"hi\"`, String.raw`\u00e9 \n`, String.raw`\"content\":\"x`]);
      const unfinished = [
        chunk(`{"content":"${content}"}`),
        chunk(`{"role":"assistant","content":"${content}"}`),
        `{"choices":[{"index":${Math.floor(next() * 20)},"delta":{"content":"${content}"},"finish_reason":null}],"id":"c"}`,
      ];
      let text = pick([...unfinished, chunk("{}", ',"logprobs":null,"finish_reason":"stop"')]);
      const edits = Math.floor(next() * 3);
      for (let edit = 0; edit < edits; edit++) {
        const at = Math.floor(next() * text.length);
        text = next() < 0.6 ? text.slice(0, at) + pick(BITS) + text.slice(at) : text.slice(0, at) + text.slice(at + 1 + Math.floor(next() * 4));
      }
      let parsed: { choices?: Array<{ index?: unknown; delta?: { content?: unknown }; finish_reason?: unknown }> } | undefined;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const span = contentSpan(text);
      // Sound: a span found in valid JSON is the one choice's content, unfinished.
      if (span && parsed) {
        found++;
        const choice = parsed.choices?.length === 1 ? parsed.choices[0] : undefined;
        expect(choice?.index, text).toBe(span.index);
        expect(choice?.delta?.content, text).toBe(JSON.parse(text.slice(span.start, span.end)));
        expect(choice?.finish_reason, text).toBeNull();
      }
      // Complete: an unmutated compact chunk with content is always found.
      if (edits === 0 && unfinished.includes(text)) expect(span, text).toBeDefined();
    }
    expect(found).toBeGreaterThan(10_000);
  });
});

describe("an output mask on chunks read as text", () => {
  it("sends what it sends on parsed chunks: values split over chunks masked, text held back, the finish and usage chunks parsed", () => {
    const pieces = ["Write to ann.l", "ee@exa", "mple.com or pay with 4111 ", "1111 1111 1111", ' today. \\"Quoted\\" ', "and ", "é".repeat(300), " end"];
    const events = [
      chunk('{"role":"assistant","content":""}'),
      ...pieces.map((piece) => chunk(`{"content":"${piece}"}`)),
      chunk("{}", ',"logprobs":null,"finish_reason":"stop"'),
      '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}',
      "[DONE]",
    ];
    const { out: asText, readAsText } = through(guardedStream("mask"), events, true);
    // The role chunk and every content chunk were read as text; the finish, usage and [DONE] parsed.
    expect(readAsText).toBe(pieces.length + 1);
    expect(asText).toEqual(through(guardedStream("mask"), events, false).out);
    const text = asText.map((item) => (item as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? "").join("");
    expect(text).toBe(`Write to [EMAIL] or pay with [CREDIT_CARD] today. "Quoted" and ${"é".repeat(300)} end`);
    expect(asText.at(-1)).toBe("[DONE]");
  });

  it("refuses as it refuses parsed chunks, before the matched text goes out", () => {
    const events = [chunk('{"content":"mail me at bob@"}'), chunk('{"content":"example.org please"}'), "[DONE]"];
    const stream = guardedStream("block");
    expect(stream.eventText(events[0])).toBe(chunk('{"content":""}'));
    expect(() => stream.eventText(events[1])).toThrow(/no-mail/);
  });
});
