import { describe, expect, it } from "vitest";
import { passStream } from "../../../core/llm/stream.ts";
import { StreamRecording } from "../../../plugins/llm-proxy/stream-record.ts";

const encoder = new TextEncoder();

function eventStream(events: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const event of events) controller.enqueue(encoder.encode(event));
      controller.close();
    },
  });
}

const EVENTS = ['data: {"a":1}\n\n', 'data: {"b":2}\n\n', "data: [DONE]\n\n"];
const ALL = EVENTS.join("");

describe("StreamRecording", () => {
  it("fed by the stream's onBytes: the client gets the stream unchanged, the copy is the whole stream by its end", async () => {
    const recording = new StreamRecording(1024);
    let atEnd: string | undefined;
    const out = passStream(eventStream(EVENTS), () => {}, {
      onBytes: recording.add,
      onEnd: () => (atEnd = new TextDecoder().decode(recording.bytes())),
    });
    expect(await new Response(out).text()).toBe(ALL);
    expect(atEnd).toBe(ALL);
  });

  it("keeps its own copy of each chunk", () => {
    const recording = new StreamRecording(1024);
    const chunk = encoder.encode("data: 1\n\n");
    recording.add(chunk);
    chunk.fill(0);
    expect(new TextDecoder().decode(recording.bytes())).toBe("data: 1\n\n");
  });

  it("is bounded: past the bound there is no copy", () => {
    const length = encoder.encode(ALL).byteLength;
    const over = new StreamRecording(length - 1);
    const exact = new StreamRecording(length);
    for (const event of EVENTS) {
      over.add(encoder.encode(event));
      exact.add(encoder.encode(event));
    }
    expect(over.bytes()).toBeUndefined();
    expect(exact.bytes()?.byteLength).toBe(length);
  });
});
