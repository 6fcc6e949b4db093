/**
 * `Connection: close` on an answer given before the client finished sending its request body:
 * an early 413 (a declared or counted body over a cap), a refusal of an upload, a backend that
 * answered mid-upload. Kept alive, such a connection is only reusable once the rest of the body
 * has been read and dropped, which @hono/node-server gives up on after 500 ms or 64 MiB: it then
 * closes the socket under a client that took the connection for reusable, and the client's next
 * request on it fails. With `close` the client opens a new connection for its next request, and
 * this one is closed once the answer is written, lingering (./linger.ts): the client may still be
 * sending, and must not lose the answer to a reset. (Deno's server says `close` by itself.)
 */
import type { Socket } from "node:net";
import { closeLingering } from "./linger.ts";

/** The parts of Node's request and response this needs (the server is HTTP/1.1). */
interface Exchange {
  incoming: { readonly complete: boolean; readonly socket: Socket };
  outgoing: { readonly headersSent: boolean; setHeader(name: string, value: string): unknown };
}

export function closeIfBodyUnread({ incoming, outgoing }: Exchange, answer: Promise<Response>): Promise<Response> {
  // Most requests (no body, or all of it in the first packets) are complete before they are handled.
  if (incoming.complete) return answer;
  return answer.then((response) => {
    if (incoming.complete || outgoing.headersSent) return response;
    outgoing.setHeader("connection", "close");
    closeLingering(incoming.socket);
    return response;
  });
}
