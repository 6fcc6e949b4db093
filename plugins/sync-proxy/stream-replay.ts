/**
 * Failover for a streamed (non-JSON) request body. A stream can be sent once, yet the
 * runtimes' fetch takes the first chunk or two before it even knows the connection failed
 * (measured: Node 1, Deno 2 chunks on a refused connection). So each attempt gets its own
 * stream that replays what earlier attempts took, then continues with the client's body.
 * A copy is kept only up to `limit` bytes: once an attempt took more, the body cannot be
 * replayed and later backends are not tried (the 50 MB upload is never held in memory).
 */

export class StreamReplay {
  private reader?: ReadableStreamDefaultReader<Uint8Array>;
  private taken: Uint8Array[] = [];
  private takenBytes = 0;
  /** No more copies are kept: the body went past `limit`, or a backend answered. */
  private sealed = false;
  private sourceDone = false;
  private generation = 0;

  constructor(
    private readonly source: ReadableStream<Uint8Array>,
    private readonly limit: number,
  ) {}

  /** The body for the next attempt, or undefined when an earlier attempt took more than can be replayed. */
  next(): ReadableStream<Uint8Array> | undefined {
    if (this.sealed && this.generation > 0) return undefined;
    const generation = ++this.generation;
    let replayed = 0;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          // A failed attempt's stream must not take chunks meant for the next attempt.
          if (generation !== this.generation) throw new Error("superseded by a later backend attempt");
          if (replayed < this.taken.length) {
            controller.enqueue(this.taken[replayed++].slice());
            return;
          }
          if (this.sourceDone) {
            controller.close();
            return;
          }
          this.reader ??= this.source.getReader();
          const { done, value } = await this.reader.read();
          if (done) {
            this.sourceDone = true;
            controller.close();
            return;
          }
          if (!this.sealed) {
            if (this.takenBytes + value.byteLength > this.limit) {
              this.seal();
            } else {
              this.taken.push(value.slice());
              this.takenBytes += value.byteLength;
              replayed++;
            }
          }
          controller.enqueue(value);
        },
        // A failed attempt leaves the client's body for the next one; `cancel()` below ends it.
        cancel: () => {},
      },
      // Nothing is read before the backend asks for it.
      { highWaterMark: 0 },
    );
  }

  /** A backend answered: keep no more copies. */
  seal(): void {
    this.sealed = true;
    this.taken = [];
    this.takenBytes = 0;
  }

  /** Stops reading the client's body (the request is over without it being sent whole). */
  async cancel(reason?: unknown): Promise<void> {
    this.seal();
    await (this.reader ? this.reader.cancel(reason) : this.source.cancel(reason)).catch(() => {});
  }
}
