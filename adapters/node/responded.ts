/**
 * When a response is done on Node: the server response's "close" (emitted after "finish",
 * and when the client goes away first). A thenable, so nothing is attached to the response
 * unless the request has after-response work (see `Gateway.fetch`).
 */
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";

export function respondedOf(outgoing: ServerResponse | Http2ServerResponse): PromiseLike<void> {
  return {
    then(onDone, onFailed) {
      const closed = new Promise<void>((resolve) => {
        if (outgoing.closed) resolve();
        else outgoing.once("close", () => resolve());
      });
      return closed.then(onDone, onFailed);
    },
  };
}
