/**
 * The client going away on Node (core/proxy/client-gone.ts), told by the server response's
 * "close" before the response was finished, or by the request's error, as @hono/node-server
 * aborts a request's `signal`, with its reasons. Reading that `signal` makes node-server build
 * an AbortController (and an EventTarget) for the request; this attaches one "close" listener,
 * and only when the gateway first asks (a backend call).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ClientGone } from "../../core/proxy/client-gone.ts";

/** The parts of Node's request and response this reads (the server is HTTP/1.1). */
interface Exchange {
  incoming: Pick<IncomingMessage, "errored">;
  outgoing: Pick<ServerResponse, "closed" | "writableFinished" | "once">;
}

class NodeClientGone implements ClientGone {
  reason: unknown;
  #watching = false;
  #listeners: Array<() => void> | undefined;

  constructor(private readonly exchange: Exchange) {}

  get aborted(): boolean {
    this.#watch();
    return this.reason !== undefined;
  }

  addEventListener(_type: "abort", listener: () => void): void {
    this.#watch();
    if (this.reason === undefined) (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const listeners = this.#listeners;
    const at = listeners ? listeners.indexOf(listener) : -1;
    if (at >= 0) listeners!.splice(at, 1);
  }

  #watch(): void {
    if (this.#watching) return;
    this.#watching = true;
    const { outgoing } = this.exchange;
    if (outgoing.closed) this.#closed();
    else outgoing.once("close", () => this.#closed());
  }

  #closed(): void {
    const { incoming, outgoing } = this.exchange;
    if (incoming.errored) this.reason = incoming.errored.toString();
    else if (!outgoing.writableFinished) this.reason = "Client connection prematurely closed.";
    else return;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    for (const listener of listeners ?? []) listener();
  }
}

export function clientGoneOf(exchange: Exchange): ClientGone {
  return new NodeClientGone(exchange);
}
