/**
 * Closing a connection while the client is still sending makes the kernel answer the unread
 * bytes with a reset, and a client that has not read the answer yet (many read it only once
 * their upload is sent) loses it to the reset. So a connection is closed lingering: our side is
 * ended (the answer and a FIN go out), what the client still sends is read and dropped, and the
 * socket is destroyed once the client closes its side, or after LINGER_MS at most.
 */
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";

const LINGER_MS = 2_000;

const lingering = new WeakSet<Duplex>();

/** Ends `socket` (once what was written is out) and destroys it lingering. */
export function endLingering(socket: Duplex): void {
  if (!socket.writableEnded) socket.end();
  if (lingering.has(socket)) return;
  lingering.add(socket);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  // The client closed its side: it has read the answer, or gone away.
  socket.once("end", () => socket.destroy());
}

/**
 * Makes Node's own close of this connection lingering: once the answer to a request it must not
 * keep alive (`Connection: close`) is written, Node calls `socket.destroySoon()`, which ends the
 * socket and destroys it right after.
 */
export function closeLingering(socket: Socket): void {
  socket.destroySoon = () => endLingering(socket);
}
