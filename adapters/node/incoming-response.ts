/**
 * A `Response` whose body is still the Node stream it arrives on. Reading it whole
 * (`arrayBuffer`, `text`, `json`) collects the chunks straight from the socket; a stream the
 * gateway reads itself takes them one by one (`BODY_CHUNKS`, `socketChunks`), with backpressure
 * (the socket pauses while 64 KiB wait); only `.body` builds a web stream, on first access, over
 * the same chunks. On Node 20 building a web stream costs 15-30 µs, a good part of a small
 * proxied response, so most answers never get one.
 */
import type { Readable } from "node:stream";
import type { ChunkReader } from "../../core/proxy/body-chunks.ts";
import { OwnBodyResponse } from "../../core/proxy/own-body-response.ts";
import { concatBytes } from "../../core/request-body/read-bytes.ts";

/**
 * Bytes queued before the socket is paused. One socket read often carries many small chunks (SSE
 * events) that arrive together; pausing after the first would split them into one write each on
 * the way out instead of one (node:http corks a tick's writes).
 */
const QUEUED_MAX_BYTES = 64 * 1024;

type ReadResult = ReadableStreamReadResult<Uint8Array>;

/**
 * The chunks of a Node stream, one per `read()`, as a web stream's default reader gives them
 * (a cancel ends a pending read as done), without the web stream: chunks that arrive before they
 * are read wait in a queue, and the socket is paused while it holds 64 KiB.
 */
export function socketChunks(source: Readable): ChunkReader {
  const queue: Buffer[] = [];
  let queuedBytes = 0;
  let waiting: { resolve(result: ReadResult): void; reject(error: unknown): void } | undefined;
  let ended = false;
  let failure: unknown;
  let failed = false;
  const settle = (result: ReadResult | undefined, error?: unknown) => {
    const reader = waiting;
    waiting = undefined;
    if (!reader) return;
    if (result) reader.resolve(result);
    else reader.reject(error);
  };
  const fail = (error: unknown) => {
    if (ended || failed) return;
    failed = true;
    failure = error;
    settle(undefined, error);
  };
  source.on("data", (chunk: Buffer) => {
    if (ended || failed) return;
    if (waiting) return settle({ done: false, value: chunk });
    queue.push(chunk);
    queuedBytes += chunk.byteLength;
    if (queuedBytes >= QUEUED_MAX_BYTES) source.pause();
  });
  source.once("end", () => {
    if (failed) return;
    ended = true;
    settle({ done: true, value: undefined });
  });
  source.once("error", fail);
  // Closed without "end" or "error" (the socket went away): not a complete body. (Every body
  // closes: the error, whose stack costs ~15 µs, is made only for one cut short.)
  source.once("close", () => {
    if (!ended && !failed) fail(new Error("the connection closed before the body was complete"));
  });
  return {
    read() {
      const chunk = queue.shift();
      if (chunk) {
        queuedBytes -= chunk.byteLength;
        if (source.isPaused() && queuedBytes < QUEUED_MAX_BYTES) source.resume();
        return Promise.resolve({ done: false, value: chunk });
      }
      if (failed) return Promise.reject(failure);
      if (ended) return Promise.resolve({ done: true, value: undefined });
      return new Promise<ReadResult>((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    cancel() {
      if (!ended && !failed) {
        ended = true;
        queue.length = 0;
        source.destroy();
      }
      settle({ done: true, value: undefined });
      return Promise.resolve();
    },
  };
}

function collect(source: Readable): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    source.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      total += chunk.byteLength;
    });
    source.once("error", reject);
    source.once("close", () => {
      if (!source.readableEnded) reject(source.errored ?? new Error("the connection closed before the body was complete"));
    });
    source.once("end", () => {
      // A fresh buffer of its own (never a slice of Node's shared pool).
      resolve(concatBytes(chunks, total));
    });
  });
}

export class IncomingResponse extends OwnBodyResponse {
  readonly #source: Readable | null;

  constructor(source: Readable | null, init: ResponseInit) {
    super(source !== null, init);
    this.#source = source;
    // A body nobody reads may still fail (the backend resets the connection): unobserved,
    // that would be an uncaught error. Readers attach their own listeners and see it.
    source?.on("error", () => {});
  }

  /** The body's chunks read straight from the socket, instead of `body`'s web stream (core/proxy/body-chunks.ts). */
  protected openChunks(): ChunkReader {
    return socketChunks(this.#source!);
  }

  protected override collect(): Promise<Uint8Array<ArrayBuffer>> {
    return collect(this.#source!);
  }
}
