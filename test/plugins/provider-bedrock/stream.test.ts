import { EventStreamCodec } from "@smithy/eventstream-codec";
import { describe, expect, it } from "vitest";
import type { OutEvent, StreamEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { EventStreamDecoder } from "../../../plugins/provider-bedrock/event-stream.ts";
import { bedrockProvider } from "../../../plugins/provider-bedrock/index.ts";
import {
  CONVERSE_CACHE_COUNTS,
  CONVERSE_USAGE,
  exceptionFrame,
  type FakeAnswer,
  streamFrames,
  THROTTLING_MESSAGE,
  TOOL_INPUT,
} from "../../fixtures/bedrock-backend.ts";

const context: TranslatorContext = { stream: true, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };
const MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";
const usage = { ...CONVERSE_USAGE, totalTokens: CONVERSE_USAGE.inputTokens + CONVERSE_USAGE.outputTokens };
const TEXT_ANSWER: FakeAnswer = { text: "Hello from Bedrock.", stopReason: "end_turn", usage };
const TOOL_ANSWER: FakeAnswer = { text: "", toolUse: { toolUseId: "tooluse_1", name: "weather", input: TOOL_INPUT }, stopReason: "tool_use", usage };

const concat = (frames: Uint8Array[]) => {
  const out = new Uint8Array(frames.reduce((n, f) => n + f.byteLength, 0));
  let at = 0;
  for (const frame of frames) {
    out.set(frame, at);
    at += frame.byteLength;
  }
  return out;
};

/** The events of `bytes` fed in pieces cut at `cuts` (byte offsets). */
function decodeCut(bytes: Uint8Array, cuts: number[]): StreamEvent[] {
  const decoder = new EventStreamDecoder();
  const events: StreamEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.byteLength]) {
    events.push(...decoder.push(bytes.subarray(from, cut)));
    from = cut;
  }
  events.push(...decoder.end());
  return events;
}

/** Drop the random `p` padding Bedrock adds, to compare payloads. */
const withoutPadding = (events: StreamEvent[]) =>
  events.map((e) => {
    const { p: _p, ...json } = e.json as Record<string, unknown>;
    return { event: e.event, json };
  });

describe("ConverseStream event-stream decoding", () => {
  it("turns each frame into an event named by :event-type with its JSON payload", () => {
    const events = decodeCut(concat(streamFrames(TEXT_ANSWER)), []);
    expect(withoutPadding(events)).toEqual([
      { event: "messageStart", json: { role: "assistant" } },
      { event: "contentBlockDelta", json: { contentBlockIndex: 0, delta: { text: "Hello " } } },
      { event: "contentBlockDelta", json: { contentBlockIndex: 0, delta: { text: "from " } } },
      { event: "contentBlockDelta", json: { contentBlockIndex: 0, delta: { text: "Bedrock." } } },
      { event: "contentBlockStop", json: { contentBlockIndex: 0 } },
      { event: "messageStop", json: { stopReason: "end_turn" } },
      { event: "metadata", json: { usage, metrics: { latencyMs: 42 } } },
    ]);
    expect(JSON.parse(events[0].data)).toEqual(events[0].json);
  });

  it("gives the same events whatever byte boundaries the body arrives in", () => {
    const bytes = concat(streamFrames(TOOL_ANSWER));
    const whole = decodeCut(bytes, []);
    expect(whole).toHaveLength(7);
    // Every single cut, including inside the 4-byte length and inside the CRCs.
    for (let cut = 1; cut < bytes.byteLength; cut++) expect(decodeCut(bytes, [cut]), `cut at ${cut}`).toEqual(whole);
    // One byte at a time.
    expect(decodeCut(bytes, Array.from({ length: bytes.byteLength - 1 }, (_, i) => i + 1))).toEqual(whole);
    // Pieces of 7 bytes and many random cuts.
    expect(decodeCut(bytes, Array.from({ length: Math.floor(bytes.byteLength / 7) }, (_, i) => (i + 1) * 7).filter((n) => n < bytes.byteLength))).toEqual(
      whole,
    );
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let round = 0; round < 50; round++) {
      const cuts = [...new Set(Array.from({ length: 12 }, () => 1 + Math.floor(random() * (bytes.byteLength - 1))))].sort((a, b) => a - b);
      expect(decodeCut(bytes, cuts), `cuts ${cuts.join(",")}`).toEqual(whole);
    }
  });

  it("surfaces an exception frame as an error event with its type and message", () => {
    const events = decodeCut(concat([...streamFrames(TEXT_ANSWER).slice(0, 2), exceptionFrame("throttlingException", THROTTLING_MESSAGE)]), []);
    expect(events[2]).toEqual({
      event: "error",
      data: JSON.stringify({ type: "throttlingException", message: THROTTLING_MESSAGE }),
      json: { type: "throttlingException", message: THROTTLING_MESSAGE },
    });
    // An unmodelled error frame (:message-type error) too.
    const codec = new EventStreamCodec((b) => new TextDecoder().decode(b), (s) => new TextEncoder().encode(s));
    const error = codec.encode({
      headers: {
        ":message-type": { type: "string", value: "error" },
        ":error-code": { type: "string", value: "InternalFailure" },
        ":error-message": { type: "string", value: "boom" },
      },
      body: new Uint8Array(0),
    });
    expect(decodeCut(error, [5])).toEqual([{
      event: "error",
      data: '{"type":"InternalFailure","message":"boom"}',
      json: { type: "InternalFailure", message: "boom" },
    }]);
  });

  it("throws on a corrupt frame or a body cut inside a frame (nothing after them can be trusted)", () => {
    const bytes = concat(streamFrames(TEXT_ANSWER));
    const corrupt = bytes.slice();
    corrupt[20] ^= 0xff;
    expect(() => new EventStreamDecoder().push(corrupt)).toThrow(/checksum/);
    const decoder = new EventStreamDecoder();
    expect(decoder.push(bytes.subarray(0, bytes.byteLength - 3))).toHaveLength(6);
    expect(() => decoder.end()).toThrow("the backend stream ended inside an event-stream frame (");
    const huge = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    expect(() => new EventStreamDecoder().push(huge)).toThrow("the backend sent an event-stream frame of 4294967295 bytes");
  });
});

/** The chat-completions events a translator sends for `frames`, then the end. */
function translate(frames: Uint8Array[], includeUsage: boolean): { out: OutEvent[]; translator: Translator } {
  const translator = bedrockProvider.createTranslator(context);
  translator.translateRequest?.({
    model: MODEL,
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  const decoder = new EventStreamDecoder();
  const out: OutEvent[] = [];
  for (const event of decoder.push(concat(frames))) out.push(...translator.translateStreamEvent!(event));
  out.push(...translator.translateStreamEnd!());
  return { out, translator };
}

const envelope = { id: "chatcmpl-id-1", object: "chat.completion.chunk", created: Date.UTC(2026, 0, 1) / 1000, model: MODEL };
const chunk = (delta: unknown, finish: string | null = null) => ({
  data: { ...envelope, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
});

describe("ConverseStream -> chat-completions chunks", () => {
  it("streams text, the finish reason, the usage chunk when asked for, then [DONE]", () => {
    const { out, translator } = translate(streamFrames(TEXT_ANSWER), true);
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello " }),
      chunk({ content: "from " }),
      chunk({ content: "Bedrock." }),
      chunk({}, "stop"),
      { data: { ...envelope, choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } } },
      { data: "[DONE]" },
    ]);
    expect(translator.streamProgress!()).toEqual({ ended: true, usage: { prompt_tokens: 12, completion_tokens: 5 } });
  });

  it("streams tool calls with their arguments in pieces", () => {
    const { out } = translate(streamFrames(TOOL_ANSWER), false);
    const input = JSON.stringify(TOOL_INPUT);
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ index: 0, id: "tooluse_1", type: "function", function: { name: "weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: input.slice(0, Math.floor(input.length / 2)) } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: input.slice(Math.floor(input.length / 2)) } }] }),
      chunk({}, "tool_calls"),
      { data: "[DONE]" },
    ]);
  });

  it("reports cache counts in the usage chunk and the stream's usage", () => {
    const cached = { ...usage, ...CONVERSE_CACHE_COUNTS, totalTokens: 2317 };
    const { out, translator } = translate(streamFrames({ ...TEXT_ANSWER, usage: cached }), true);
    expect(out[out.length - 2]).toEqual({
      data: {
        ...envelope,
        choices: [],
        usage: { prompt_tokens: 2312, completion_tokens: 5, total_tokens: 2317, prompt_tokens_details: { cached_tokens: 2000 } },
      },
    });
    expect(translator.streamProgress!().usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, cached_tokens: 2000, cache_creation_tokens: 300 });
  });

  it("ends cleanly after messageStop even without metadata, without usage; is not ended before messageStop", () => {
    const frames = streamFrames(TEXT_ANSWER);
    const { out, translator } = translate(frames.slice(0, -1), true);
    expect(out.slice(-2)).toEqual([chunk({}, "stop"), { data: "[DONE]" }]);
    expect(translator.streamProgress!()).toEqual({ ended: true, usage: undefined });
    const cut = translate(frames.slice(0, 3), true);
    expect(cut.translator.streamProgress!()).toEqual({ ended: false, usage: undefined });
    expect(cut.out.some((e) => e.data === "[DONE]")).toBe(false);
  });

  it("turns an exception in the stream into one chat-completions error event, and ends there", () => {
    const { out, translator } = translate([...streamFrames(TEXT_ANSWER).slice(0, 2), exceptionFrame("throttlingException", THROTTLING_MESSAGE)], true);
    expect(out).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hello " }),
      { data: { error: { message: `${THROTTLING_MESSAGE} (Bedrock ThrottlingException)`, type: "rate_limit_error", code: "ThrottlingException" } } },
    ]);
    expect(translator.streamProgress!().ended).toBe(true);
    const tooLong = translate([exceptionFrame("validationException", "Input is too long for requested model.")], false).out;
    expect(tooLong).toEqual([{
      data: {
        error: {
          message: "Input is too long for requested model. (Bedrock ValidationException)",
          type: "invalid_request_error",
          code: "context_length_exceeded",
        },
      },
    }]);
  });
});
