/**
 * Byte-stream helpers shared by object store implementations. Runtime-agnostic:
 * web streams only.
 */

/** Errors a put's body raised (see `isBodyError`). A WeakSet: the error objects stay the caller's. */
const bodyErrors = new WeakSet<object>();

/**
 * True when a failed put failed because the body it was handed failed (an upload cut off at
 * its size limit, a client that went away), not because of the store: such a failure is the
 * caller's to report and is no store error. Stores may wrap the body's error (the S3 SDK
 * does), so the `cause` chain is followed a few levels.
 */
export function isBodyError(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    if (bodyErrors.has(current)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The body handed to `ObjectStore.put`, read one chunk at a time. It counts what it
 * hands out (put resolves with that count) and can cancel the caller's stream, so
 * a put that fails part-way tells the producer (an HTTP upload, say) to stop.
 */
export class BodySource {
  #reader: ReadableStreamDefaultReader<Uint8Array> | null;
  #whole: Uint8Array | null;
  #bytes = 0;
  #finished = false;

  constructor(body: ReadableStream<Uint8Array> | Uint8Array) {
    if (body instanceof Uint8Array) {
      this.#whole = body;
      this.#reader = null;
    } else {
      this.#whole = null;
      this.#reader = body.getReader();
    }
  }

  /** Bytes handed out so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The next chunk, or null at the end. Rejects with the body's own error (marked, see `isBodyError`). */
  async read(): Promise<Uint8Array | null> {
    if (this.#finished) return null;
    if (!this.#reader) {
      const whole = this.#whole;
      this.#whole = null;
      this.#finished = true;
      if (!whole || whole.byteLength === 0) return null;
      this.#bytes += whole.byteLength;
      return whole;
    }
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await this.#reader.read();
    } catch (error) {
      this.#finished = true;
      if (typeof error === "object" && error !== null) bodyErrors.add(error);
      throw error;
    }
    if (result.done) {
      this.#finished = true;
      return null;
    }
    this.#bytes += result.value.byteLength;
    return result.value;
  }

  /** Best effort and idempotent: never throws, so it is safe in cleanup paths. */
  async cancel(reason?: unknown): Promise<void> {
    this.#whole = null;
    if (this.#finished) return;
    this.#finished = true;
    await this.#reader?.cancel(reason).catch(() => undefined);
  }

  /** A pull-based stream over the remaining chunks; cancelling it cancels the body. */
  stream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const chunk = await this.read();
          if (chunk === null) controller.close();
          else controller.enqueue(chunk);
        },
        cancel: (reason) => this.cancel(reason),
      },
      // Pull only when the consumer asks: the consumer decides how much is in flight.
      { highWaterMark: 0 },
    );
  }
}

/**
 * A FIFO of byte chunks that hands out exact-size pieces, for re-chunking a stream
 * into fixed-size records without concatenating everything read so far.
 */
export class ByteQueue {
  #chunks: Uint8Array[] = [];
  /** Bytes of `#chunks[0]` already taken. */
  #offset = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(chunk: Uint8Array): void {
    if (chunk.byteLength === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.byteLength;
  }

  /**
   * Removes the first `n` bytes (at most `length`) and returns them as a new,
   * ArrayBuffer-backed array: a copy, so callers may hand it to WebCrypto and the
   * queued chunks are released as soon as they are consumed.
   */
  take(n: number): Uint8Array<ArrayBuffer> {
    if (n > this.#length) throw new RangeError(`ByteQueue.take(${n}) with only ${this.#length} bytes queued`);
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const first = this.#chunks[0];
      const count = Math.min(first.byteLength - this.#offset, n - filled);
      out.set(first.subarray(this.#offset, this.#offset + count), filled);
      filled += count;
      this.#offset += count;
      if (this.#offset === first.byteLength) {
        this.#chunks.shift();
        this.#offset = 0;
      }
    }
    this.#length -= n;
    return out;
  }
}
