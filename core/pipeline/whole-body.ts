/**
 * A mark on a Response whose body is already in memory (bytes read whole, an error body):
 * the client has the whole answer as soon as the server writes it, so the pipeline does the
 * work that must come before the end of an answer (`ctx.beforeEnd`) before it hands the
 * Response over, instead of watching the body stream for its last byte (a web stream per
 * response, and the server could no longer send the bytes in one write).
 *
 * A symbol property on the Response itself, not a WeakSet (see request-slot.ts on what long-lived
 * weak collections cost the minor GC).
 */
import { OwnBodyResponse } from "../proxy/own-body-response.ts";

const WHOLE: unique symbol = Symbol("gateway.wholeBody");

type Marked = Response & { [WHOLE]?: true };

/** Marks `response` (returned as is) as carrying its body in memory. */
export function wholeBody<R extends Response>(response: R): R {
  (response as Marked)[WHOLE] = true;
  return response;
}

/**
 * Whether the client has the whole answer once the server writes it: one marked in memory, or
 * no body. The mark is checked first: reading `.body` of @hono/node-server's lightweight
 * Response builds the full WHATWG Response and its ReadableStream (~40 µs per request).
 */
export function isWhole(response: Response): boolean {
  if ((response as Marked)[WHOLE] === true) return true;
  // Nor of an own-body Response, which would build its web stream (core/proxy/own-body-response.ts).
  return response instanceof OwnBodyResponse ? !response.hasBody : response.body === null;
}
