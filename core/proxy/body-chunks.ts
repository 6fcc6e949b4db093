/**
 * A body read chunk by chunk. Any `Response` gives its `body` (a web stream); an own-body
 * `Response` (own-body-response.ts: Node's client's answers, the gateway's streams on Node)
 * hands its chunks over without one (`BODY_CHUNKS`): on Node 20 building a web stream costs
 * 15-30 µs and every read through one a promise chain of its own, for each of a stream's events
 * (docs/design.md#streaming).
 */

/** The buffer a backend stream is read into when it lets the reader bring one (see `chunkReader`). */
const READ_SIZE = 4096;

export interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * Whether a stream refused a BYOB reader. A refusal is a thrown TypeError, which costs more
 * than the reads it would save, so once one stream refused (Node's client makes plain
 * streams) no later one is asked; a stream read the default way is only slower, never wrong.
 */
let byobRefused = false;

/**
 * Reads a backend stream with the gateway's own 4 KiB buffers when it is a byte stream (a
 * BYOB reader: Deno's fetch bodies), else with its default reader (Node's client). Deno's
 * default reader allocates 64 KiB per chunk, however small the chunk; for a stream of small
 * SSE events that allocation was most of the CPU the gateway spent passing it on. (A byte
 * stream must answer a pending read with `byobRequest.respond(0)` when it closes, as the
 * runtimes' fetch bodies do; one built by hand that only calls `close()` would never end.)
 */
export function chunkReader(source: ReadableStream<Uint8Array>): ChunkReader {
  let byob: ReadableStreamBYOBReader | undefined;
  if (!byobRefused) {
    try {
      byob = source.getReader({ mode: "byob" });
    } catch {
      byobRefused = true;
    }
  }
  if (byob) {
    const reader = byob;
    return { read: () => reader.read(new Uint8Array(READ_SIZE)), cancel: (reason) => reader.cancel(reason) };
  }
  return defaultChunkReader(source);
}

/** A stream's chunks through its default reader, as the stream makes them. */
export function defaultChunkReader(source: ReadableStream<Uint8Array>): ChunkReader {
  const reader = source.getReader();
  return { read: () => reader.read(), cancel: (reason) => reader.cancel(reason) };
}

/**
 * The method by which a `Response` hands over its body's chunks itself, once, instead of as a
 * web stream: undefined when it cannot (its body already read), and then `body` is not usable.
 */
export const BODY_CHUNKS: unique symbol = Symbol.for("inference-gateway.body-chunks");

export interface ChunkedBody {
  [BODY_CHUNKS]?(): ChunkReader | undefined;
}

/** A response body's chunks: its own reader when it has one, else read from `body`; undefined without a body. */
export function bodyChunks(response: Response): ChunkReader | undefined {
  const own = (response as Response & ChunkedBody)[BODY_CHUNKS]?.();
  if (own) return own;
  return response.body ? chunkReader(response.body) : undefined;
}
