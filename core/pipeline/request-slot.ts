/**
 * What the gateway knows about one request beyond the Request itself (when the adapter has
 * sent its response, a refusal decided before routing, the pipeline context), kept on the
 * Request under a private symbol.
 *
 * Not in WeakMaps keyed by the Request: V8's minor GC treats the values of a long-lived
 * WeakMap as reachable, and the context refers back to its request, so every request's
 * objects survived minor GCs until the next major GC. With the WeakMaps a 100 req/s load
 * promoted ~600 KB per minor GC and ran twice the major GCs (`node --trace-gc-nvp`; with
 * this slot ~170-250 KB), the long pauses of the p99.
 */
import type { ClientGone } from "../proxy/client-gone.ts";
import type { Principal, RequestOrigin, RequestState } from "./context.ts";

export interface RequestSlot {
  /** Settles once the server adapter has sent the response (see `Gateway.fetch`). */
  responded?: PromiseLike<unknown>;
  /** Why the gateway refuses the request before any route (a path not in normal form). */
  refusal?: string;
  /**
   * How many times the client sent a header, any letter case (`name` in lower case), counted
   * by the server adapter from the raw request: a `Headers` object joins repeats into one
   * value with ", ", so they cannot be told apart from a list sent once. Absent when the
   * adapter cannot tell (then no header counts as repeated).
   */
  timesSent?: (name: string) => number;
  /** The client going away, when the server adapter tells it without the request's `signal` (see `Gateway.fetch`). */
  clientGone?: ClientGone;
  /** The server adapter writes an own-body Response's chunks itself (see `Gateway.fetch`). */
  ownBodies?: boolean;
  context?: RequestState;
  /**
   * Set only by `PluginApi.dispatchAs` on a Request the gateway built itself: who it runs as.
   * A request from outside never has it (the adapter builds a new Request per client request),
   * so no header or body can make a request run as someone else.
   */
  dispatched?: { principal: Principal; origin: Exclude<RequestOrigin, "client"> };
}

const SLOT: unique symbol = Symbol("gateway.requestSlot");

type Slotted = Request & { [SLOT]?: RequestSlot };

/** The request's slot, created on first use. */
export function slotOf(request: Request): RequestSlot {
  const slotted = request as Slotted;
  return (slotted[SLOT] ??= {});
}

/** The request's slot if the gateway has one for it (a request it is handling). */
export function existingSlotOf(request: Request): RequestSlot | undefined {
  return (request as Slotted)[SLOT];
}
