/**
 * A streamed answer recorded as the client gets it, for the response cache (`llm.cache_streams`):
 * the stream of core/llm/stream.ts hands each chunk it sends to `add` (its `onBytes`), a copy is
 * kept up to a bound, and the handler takes the copy once the stream ended complete (its
 * `onEnd`). A stream past the bound has no copy. In the stream's own pull, not a
 * TransformStream piped behind it: that cost a pipe (promises per chunk) per cached stream.
 */
import type { Bytes } from "../../core/llm/json.ts";
import { concatBytes } from "../../core/request-body/read-bytes.ts";

export class StreamRecording {
  private chunks: Uint8Array[] = [];
  private total = 0;
  private over = false;

  constructor(private readonly maxBytes: number) {}

  /** A chunk as it goes to the client (copied: the caller's buffer is not kept). */
  readonly add = (chunk: Uint8Array): void => {
    if (this.over) return;
    this.total += chunk.byteLength;
    if (this.total > this.maxBytes) {
      this.over = true;
      this.chunks = [];
      return;
    }
    this.chunks.push(chunk.slice());
  };

  /** Everything added, in one buffer; undefined when it went past the bound. */
  bytes(): Bytes | undefined {
    return this.over ? undefined : concatBytes(this.chunks, this.total);
  }
}
