/**
 * A stream passed on untranslated and watched by its bytes (core/llm/sse-scan.ts) must see the
 * same end and usage as one whose every event is parsed, however the backend's chunks split
 * the events, and must pass every byte on unchanged.
 */
import { describe, expect, it } from "vitest";
import { ChatStreamWatch } from "../../../core/llm/chat-stream-watch.ts";
import { SseParser } from "../../../core/llm/sse.ts";
import { SseByteScan } from "../../../core/llm/sse-scan.ts";
import { passStream, type StreamOutcome } from "../../../core/llm/stream.ts";

const encoder = new TextEncoder();

function delta(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;
}

const USAGE = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}\n\n';

const STREAMS: Record<string, string> = {
  "a whole answer": delta("Hello ") + delta("wörld 🌍 ") + delta("", "stop") + USAGE + "data: [DONE]\n\n",
  "content that talks about usage and finish_reason": delta('"usage" and "finish_reason":"stop"') + delta("x") + USAGE + "data: [DONE]\n\n",
  "a spaced finish reason and no [DONE]": delta("a") + 'data: {"choices":[{"index":0,"delta":{},"finish_reason" :  "length"}]}\n\n',
  "multi-line data": delta("a") + 'data: {\ndata: "choices":[{"finish_reason":\ndata: "stop"}]}\n\n',
  "an error event": delta("a") + 'data: {"error":{"message":"overloaded"}}\n\n',
  "no blank line after the last event": delta("a") + USAGE + "data: [DONE]",
  "comments and event names": ": keep-alive\n\nevent: message\n" + delta("a") + USAGE + "data: [DONE]\n\n",
  "CRLF line ends": (delta("a") + delta("", "stop") + USAGE + "data: [DONE]\n\n").replaceAll("\n", "\r\n"),
  "CRLF from the middle on": delta("a") + (delta("", "stop") + USAGE).replaceAll("\n", "\r\n") + "data: [DONE]\r\n\r\n",
  "only deltas": delta("a") + delta("b"),
};

/** The progress when every event is parsed (what the watch saw before the scan). */
function parsedWhole(text: string) {
  const watch = new ChatStreamWatch();
  const parser = new SseParser();
  for (const event of [...parser.push(text), ...parser.end()]) watch.event(event);
  return watch.progress();
}

function scanned(chunks: Uint8Array[]) {
  const watch = new ChatStreamWatch();
  const scan = new SseByteScan(new SseParser(), ChatStreamWatch.mayMatter);
  for (const chunk of chunks) for (const event of scan.push(chunk)) watch.event(event);
  for (const event of scan.end()) watch.event(event);
  return watch.progress();
}

/** Every split of `bytes` into two chunks, and into chunks of 1, 3 and 7 bytes. */
function splits(bytes: Uint8Array): Uint8Array[][] {
  const out: Uint8Array[][] = [[bytes]];
  for (let at = 1; at < bytes.byteLength; at++) out.push([bytes.slice(0, at), bytes.slice(at)]);
  for (const size of [1, 3, 7]) {
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < bytes.byteLength; at += size) chunks.push(bytes.slice(at, at + size));
    out.push(chunks);
  }
  return out;
}

describe("SseByteScan with the chat-completions watch", () => {
  for (const [name, text] of Object.entries(STREAMS)) {
    it(`sees what parsing every event sees: ${name}`, () => {
      const expected = parsedWhole(text);
      for (const chunks of splits(encoder.encode(text))) expect(scanned(chunks)).toEqual(expected);
    });
  }

  it("parses none of a stream's content deltas", () => {
    const parser = new SseParser();
    let parsed = 0;
    const push = parser.push.bind(parser);
    parser.push = (text) => {
      const events = push(text);
      parsed += events.length;
      return events;
    };
    const scan = new SseByteScan(parser, ChatStreamWatch.mayMatter);
    for (const chunk of [delta("a"), delta("b"), delta("", "stop"), USAGE, "data: [DONE]\n\n"]) scan.push(encoder.encode(chunk));
    scan.end();
    // The finish, the usage and [DONE].
    expect(parsed).toBe(3);
  });
});

describe("passStream with the chat-completions watch", () => {
  const translator = () => {
    const watch = new ChatStreamWatch();
    return { observeStreamEvent: watch.event.bind(watch), observedEventsMayMatter: ChatStreamWatch.mayMatter, streamProgress: () => watch.progress() };
  };

  it("passes every byte on and reports the end and usage, event by event or split anywhere", async () => {
    const text = STREAMS["a whole answer"];
    for (const chunks of [text.split(/(?<=\n\n)/), [text.slice(0, 50), text.slice(50, 333), text.slice(333)]]) {
      const outcomes: StreamOutcome[] = [];
      let i = 0;
      const source = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
          else controller.close();
        },
      });
      const out = passStream(source, () => {}, { translator: translator(), onEnd: (o) => outcomes.push(o) });
      expect(await new Response(out).text()).toBe(text);
      expect(outcomes).toEqual([{ usage: { prompt_tokens: 3, completion_tokens: 4 } }]);
    }
  });

  it("still ends a stream that stops before its end with the error event", async () => {
    const outcomes: StreamOutcome[] = [];
    const chunks = [delta("a"), delta("b")];
    let i = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
        else controller.close();
      },
    });
    const body = await new Response(passStream(source, () => {}, { translator: translator(), onEnd: (o) => outcomes.push(o) })).text();
    expect(body.startsWith(chunks.join(""))).toBe(true);
    expect(body).toContain('"code":"stream_interrupted"');
    expect(outcomes).toEqual([{ incomplete: "no_end", usage: undefined }]);
  });
});
