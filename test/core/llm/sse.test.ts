import { describe, expect, it } from "vitest";
import { NdjsonParser } from "../../../core/llm/ndjson.ts";
import type { StreamEvent } from "../../../core/llm/events.ts";
import { formatSse, SseParser } from "../../../core/llm/sse.ts";

/** An event as what a reader sees (`json` is parsed when first read). */
function seen(event: StreamEvent): StreamEvent {
  return { ...(event.event !== undefined ? { event: event.event } : {}), data: event.data, json: event.json };
}

/** Feeds `chunks` one by one and collects every event, including those flushed at the end. */
function parseAll(chunks: string[]) {
  const parser = new SseParser();
  return [...chunks.flatMap((c) => parser.push(c)), ...parser.end()].map(seen);
}

describe("SseParser", () => {
  it("parses named and unnamed events, with the data parsed as JSON once", () => {
    const events = parseAll(['event: message_start\ndata: {"type":"message_start"}\n\ndata: [DONE]\n\n']);
    expect(events).toEqual([
      { event: "message_start", data: '{"type":"message_start"}', json: { type: "message_start" } },
      { data: "[DONE]", json: undefined },
    ]);
  });

  it("reassembles an event split across chunks at any point", () => {
    const text = 'event: delta\ndata: {"text":"héllo"}\n\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect(parseAll([text.slice(0, cut), text.slice(cut)])).toEqual([{ event: "delta", data: '{"text":"héllo"}', json: { text: "héllo" } }]);
    }
  });

  it("accepts CRLF and CR line ends, even a CRLF split between chunks", () => {
    expect(parseAll(["data: a\r\n\r\ndata: b\r\rdata: c\r", "\n\r", "\n"]).map((e) => e.data)).toEqual(["a", "b", "c"]);
  });

  it("joins multi-line data with newlines and strips only one leading space", () => {
    expect(parseAll(["data: line one\ndata:  line two\ndata:three\n\n"])[0].data).toBe("line one\n line two\nthree");
  });

  it("ignores comments, id/retry fields and blank events, and strips a BOM", () => {
    const events = parseAll(["\uFEFF: keep-alive\n\nid: 7\nretry: 100\n\n: ping\ndata: x\nid: 8\n\n"]);
    expect(events).toEqual([{ data: "x", json: undefined }]);
  });

  it("delivers an event left open when the stream ends", () => {
    expect(parseAll(['data: {"last":true}'])).toEqual([{ data: '{"last":true}', json: { last: true } }]);
  });

  it("resets the event name after each event", () => {
    expect(parseAll(["event: a\ndata: 1\n\ndata: 2\n\n"]).map((e) => e.event)).toEqual(["a", undefined]);
  });
});

describe("NdjsonParser", () => {
  it("parses one JSON object per line across chunks and skips blank lines", () => {
    const parser = new NdjsonParser();
    const events = [...parser.push('{"a":1}\n{"b"'), ...parser.push(":2}\r\n\n"), ...parser.push('{"c":3}'), ...parser.end()];
    expect(events.map((e) => e.json)).toEqual([{ a: 1 }, { b: 2 }, { c: 3 }]);
  });
});

describe("formatSse", () => {
  it("writes strings as is, objects as JSON, and a data line per line", () => {
    expect(formatSse({ data: "[DONE]" })).toBe("data: [DONE]\n\n");
    expect(formatSse({ event: "x", data: { a: 1 } })).toBe('event: x\ndata: {"a":1}\n\n');
    expect(formatSse({ data: "one\ntwo" })).toBe("data: one\ndata: two\n\n");
  });

  it("writes an object as one data line, line breaks in its strings escaped", () => {
    const data = { text: "one\ntwo\r\nthree\r" };
    expect(formatSse({ data })).toBe(`data: ${JSON.stringify(data)}\n\n`);
    expect(new SseParser().push(formatSse({ data })).map((event) => event.json)).toEqual([data]);
  });

  it("round-trips through the parser", () => {
    const parser = new SseParser();
    expect(parser.push(formatSse({ event: "e", data: "multi\nline" })).map(seen)).toEqual([{ event: "e", data: "multi\nline", json: undefined }]);
  });
});
