import { beforeAll, describe, expect, it, vi } from "vitest";
import type { StreamEvent } from "../../../core/llm/events.ts";
import { openStream, passStream, type StreamOutcome, translateStream } from "../../../core/llm/stream.ts";

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

/**
 * The same as a byte stream (what Deno's and undici's fetch bodies are), which the gateway
 * reads with its own buffers. Closing answers the pending read with `respond(0)`, as a byte
 * source must for a reader that brings its buffer (the runtimes' own bodies do).
 */
function byteSource(chunks: string[], error?: Error): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
      else if (error) controller.error(error);
      else {
        controller.close();
        controller.byobRequest?.respond(0);
      }
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
      'data: {"ok":true}\n\ndata: {"error":{"message":"stream translation failed: unexpected chunk","type":"backend_error","code":"stream_interrupted"}}\n\n',
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
      'data: 1\n\ndata: {"error":{"message":"the backend stream broke off: socket hang up","type":"backend_error","code":"stream_interrupted"}}\n\n',
    );
  });
});

describe("how a stream ended", () => {
  /** A provider that follows the end marker "END" and a usage event. */
  function watching() {
    const state = { ended: false, usage: undefined as { prompt_tokens: number; completion_tokens: number } | undefined };
    return {
      observeStreamEvent: (event: StreamEvent) => {
        if (event.data === "END") state.ended = true;
        if (event.data === "USAGE") state.usage = { prompt_tokens: 2, completion_tokens: 3 };
      },
      streamProgress: () => state,
    };
  }

  it("ends a stream that closes without its end with one error event, told as no_end with the usage so far", async () => {
    const outcomes: StreamOutcome[] = [];
    const out = passStream(source(["data: USAGE\n\n", "data: 1"]), () => {}, { translator: watching(), onEnd: (o) => outcomes.push(o) });
    expect(await text(out)).toBe(
      `data: USAGE\n\ndata: 1\n\ndata: {"error":{"message":"the backend stream ended before the end of the answer: the answer is incomplete","type":"backend_error","code":"stream_interrupted"}}\n\n`,
    );
    expect(outcomes).toEqual([{ incomplete: "no_end", usage: { prompt_tokens: 2, completion_tokens: 3 } }]);
  });

  it("closes cleanly when the connection breaks after the protocol's end", async () => {
    const outcomes: StreamOutcome[] = [];
    const out = passStream(source(["data: 1\n\n", "data: END\n\n"], new Error("reset")), () => {}, { translator: watching(), onEnd: (o) => outcomes.push(o) });
    expect(await text(out)).toBe("data: 1\n\ndata: END\n\n");
    expect(outcomes).toEqual([{ usage: undefined }]);
  });

  it("tells reset when the connection breaks before the end", async () => {
    const outcomes: StreamOutcome[] = [];
    const out = translateStream(source(["data: 1\n\n"], new Error("reset")), {
      format: "sse",
      onError: () => {},
      translator: { translateStreamEvent: (event) => [{ data: event.data }], streamProgress: () => ({ ended: false, usage: undefined }) },
      onEnd: (o) => outcomes.push(o),
    });
    expect(await text(out)).toContain("the backend stream broke off: reset");
    expect(outcomes).toEqual([{ incomplete: "reset", usage: undefined }]);
  });

  /** A backend that sends `chunks` when asked, then falls silent (and tells when it is cancelled). */
  function stalling(chunks: string[]) {
    const state = { cancelled: false };
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (i < chunks.length) controller.enqueue(encoder.encode(chunks[i++]));
        // Else: no answer, the read waits.
      },
      cancel() {
        state.cancelled = true;
      },
    }, { highWaterMark: 0 });
    return { stream, state };
  }

  it("ends a stream whose backend falls silent between events with one error event (idle), and cancels the backend", async () => {
    const outcomes: StreamOutcome[] = [];
    const backend = stalling(["data: 1\n\n", "data: 2\n\n"]);
    const out = passStream(backend.stream, () => {}, { idleTimeoutMs: 40, onEnd: (o) => outcomes.push(o) });
    expect(await text(out)).toBe(
      'data: 1\n\ndata: 2\n\ndata: {"error":{"message":"the backend stream fell silent for 40 ms (llm.stream_idle_timeout): the answer is incomplete","type":"backend_error","code":"stream_interrupted"}}\n\n',
    );
    expect(outcomes).toEqual([{ incomplete: "idle", usage: undefined }]);
    expect(backend.state.cancelled).toBe(true);
  });

  it("counts only the wait for the backend as silence: a client that reads slowly does not end a stream", async () => {
    const outcomes: StreamOutcome[] = [];
    const out = passStream(source(["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"]), () => {}, { idleTimeoutMs: 30, onEnd: (o) => outcomes.push(o) });
    const reader = out.getReader();
    const got: string[] = [];
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      got.push(new TextDecoder().decode(chunk.value));
      // Longer than the idle limit between reads, each read answered at once by the backend.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(got.join("")).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n");
    expect(outcomes).toEqual([{ usage: undefined }]);
  });

  it("refuses to open a stream that ends or breaks off before its first bytes", async () => {
    await expect(openStream(source([]), 0)).rejects.toThrow("the backend stream ended before its first event");
    await expect(openStream(source([], new Error("reset")), 0)).rejects.toThrow("the backend stream broke off before its first event: reset");
    const opened = await openStream(source(["", "data: 1\n\n"]), 0);
    expect(new TextDecoder().decode(opened.first)).toBe("data: 1\n\n");
  });
});

describe.each([
  { kind: "default", make: source },
  { kind: "byte", make: byteSource },
])("passStream over a $kind stream", ({ make }) => {
  // A fresh module each: once a plain stream refused a BYOB reader, the module stops asking.
  let passStream: typeof import("../../../core/llm/stream.ts").passStream;
  beforeAll(async () => {
    vi.resetModules();
    ({ passStream } = await import("../../../core/llm/stream.ts"));
  });
  const broke = 'data: {"error":{"message":"the backend stream broke off: reset","type":"backend_error","code":"stream_interrupted"}}\n\n';

  it("passes every byte on unchanged, chunks larger than its read buffer included", async () => {
    const big = `data: ${"x".repeat(10_000)}\n\n`;
    expect(await text(passStream(make(["data: 1\n\n", big, "data: [DONE]\n\n"]), () => {}))).toBe(`data: 1\n\n${big}data: [DONE]\n\n`);
  });

  it("ends with one error event after a break between events", async () => {
    const reasons: string[] = [];
    const out = passStream(make(["data: 1\n\n"], new Error("reset")), (reason) => reasons.push(reason));
    expect(await text(out)).toBe(`data: 1\n\n${broke}`);
    expect(reasons).toEqual(["the backend stream broke off"]);
  });

  it("closes a cut event with a blank line first, however the last bytes were split into chunks", async () => {
    expect(await text(passStream(make(["data: 1\n\ndata: 2"], new Error("reset")), () => {}))).toBe(`data: 1\n\ndata: 2\n\n${broke}`);
    expect(await text(passStream(make(["data: 1\n\ndata", ":", " ", "2"], new Error("reset")), () => {}))).toBe(`data: 1\n\ndata: 2\n\n${broke}`);
    expect(await text(passStream(make(["data: 1", "\r\n", "\r", "\n"], new Error("reset")), () => {}))).toBe(`data: 1\r\n\r\n${broke}`);
    expect(await text(passStream(make([], new Error("reset")), () => {}))).toBe(broke);
  });

  it("goes on with whichever kind of stream comes next", async () => {
    const other = make === source ? byteSource : source;
    expect(await text(passStream(other(["data: 1\n\n", "data: 2\n\n"]), () => {}))).toBe("data: 1\n\ndata: 2\n\n");
    expect(await text(passStream(make(["data: 3\n\n"]), () => {}))).toBe("data: 3\n\n");
  });
});
