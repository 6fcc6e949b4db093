/**
 * A streamed answer recorded as the client gets it, for the response cache (`llm.cache_streams`):
 * the bytes pass through unchanged, a copy is kept up to a bound, and when the client's stream
 * ends the copy is handed on if the stream ended complete. A stream past the bound, one that
 * ended with an error event, or one the client left is not handed on.
 */
import type { Bytes } from "../../core/llm/json.ts";
import { concatBytes } from "../../core/request-body/read-bytes.ts";

/**
 * `response` with its body recorded; `complete()` is asked once the body has ended (the stream's
 * `onEnd` has run by then), and `recorded` gets the bytes when it says yes.
 */
export function recordStream(response: Response, maxBytes: number, complete: () => boolean, recorded: (body: Bytes) => void): Response {
  if (!response.body) return response;
  let chunks: Uint8Array[] = [];
  let total = 0;
  let over = false;
  const copy = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      controller.enqueue(chunk);
      if (over) return;
      total += chunk.byteLength;
      if (total > maxBytes) {
        over = true;
        chunks = [];
        return;
      }
      chunks.push(chunk.slice());
    },
    flush() {
      if (!over && complete()) recorded(concatBytes(chunks, total));
    },
  });
  return new Response(response.body.pipeThrough(copy), { status: response.status, statusText: response.statusText, headers: response.headers });
}
