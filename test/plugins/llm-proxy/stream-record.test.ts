import { describe, expect, it } from "vitest";
import { recordStream } from "../../../plugins/llm-proxy/stream-record.ts";

const encoder = new TextEncoder();

function eventStream(events: string[]): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const event of events) controller.enqueue(encoder.encode(event));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream", "x-cache": "MISS" } });
}

const EVENTS = ['data: {"a":1}\n\n', 'data: {"b":2}\n\n', "data: [DONE]\n\n"];
const ALL = EVENTS.join("");

describe("recordStream", () => {
  it("passes the stream through unchanged and hands on the whole copy when the stream ended complete", async () => {
    const recorded: string[] = [];
    const response = recordStream(eventStream(EVENTS), 1024, () => true, (body) => recorded.push(new TextDecoder().decode(body)));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-cache")).toBe("MISS");
    expect(await response.text()).toBe(ALL);
    expect(recorded).toEqual([ALL]);
  });

  it("hands on nothing when the stream did not end complete", async () => {
    const recorded: Uint8Array[] = [];
    const response = recordStream(eventStream(EVENTS), 1024, () => false, (body) => recorded.push(body));
    expect(await response.text()).toBe(ALL);
    expect(recorded).toEqual([]);
  });

  it("is bounded: a stream longer than the bound reaches the client whole and is not recorded", async () => {
    const recorded: Uint8Array[] = [];
    const length = encoder.encode(ALL).byteLength;
    const over = recordStream(eventStream(EVENTS), length - 1, () => true, (body) => recorded.push(body));
    expect(await over.text()).toBe(ALL);
    expect(recorded).toEqual([]);
    const exact = recordStream(eventStream(EVENTS), length, () => true, (body) => recorded.push(body));
    await exact.text();
    expect(recorded).toHaveLength(1);
  });
});
