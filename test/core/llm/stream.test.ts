import { describe, expect, it } from "vitest";
import type { StreamEvent } from "../../../core/llm/events.ts";
import { translateStream } from "../../../core/llm/stream.ts";

const encoder = new TextEncoder();

/** A backend body that yields `chunks`, then ends (or breaks off with `error`). */
function source(chunks: string[], error?: Error): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
      else if (error) controller.error(error);
      else controller.close();
    },
  });
}

async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return await new Response(stream).text();
}

describe("translateStream", () => {
  it("hands the translator parsed events and writes what it returns as SSE", async () => {
    const seen: StreamEvent[] = [];
    const out = translateStream(source(['data: {"n":1}\n', '\ndata: {"n":2}\n\n']), {
      format: "sse",
      onError: () => {},
      translator: {
        translateStreamEvent: (event) => {
          seen.push(event);
          return [{ data: { doubled: (event.json as { n: number }).n * 2 } }];
        },
        translateStreamEnd: () => [{ data: "[DONE]" }],
      },
    });
    expect(await text(out)).toBe('data: {"doubled":2}\n\ndata: {"doubled":4}\n\ndata: [DONE]\n\n');
    expect(seen.map((e) => e.data)).toEqual(['{"n":1}', '{"n":2}']);
  });

  it("reads NDJSON when the provider says so", async () => {
    const out = translateStream(source(['{"a":1}\n{"a"', ":2}\n"]), {
      format: "ndjson",
      onError: () => {},
      translator: { translateStreamEvent: (event) => [{ data: event.json }] },
    });
    expect(await text(out)).toBe('data: {"a":1}\n\ndata: {"a":2}\n\n');
  });

  it("sends what was translated, then one clean error event when the translator throws, and cancels the backend", async () => {
    const reasons: string[] = [];
    let cancelled = false;
    const backend = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('data: {"ok":true}\n\ndata: {"bad":true}\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    const out = translateStream(backend, {
      format: "sse",
      onError: (reason) => reasons.push(reason),
      translator: {
        translateStreamEvent: (event) => {
          if ((event.json as { bad?: boolean }).bad) throw new Error("unexpected chunk");
          return [{ data: event.json }];
        },
      },
    });
    expect(await text(out)).toBe(
      'data: {"ok":true}\n\ndata: {"error":{"message":"stream translation failed: unexpected chunk","type":"backend_error"}}\n\n',
    );
    expect(reasons).toEqual(["stream translation failed"]);
    expect(cancelled).toBe(true);
  });

  it("ends with an error event when the backend stream breaks off", async () => {
    const out = translateStream(source(["data: 1\n\n"], new Error("socket hang up")), {
      format: "sse",
      onError: () => {},
      translator: { translateStreamEvent: (event) => [{ data: event.data }] },
    });
    expect(await text(out)).toBe(
      'data: 1\n\ndata: {"error":{"message":"the backend stream broke off: socket hang up","type":"backend_error"}}\n\n',
    );
  });
});
