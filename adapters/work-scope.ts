/**
 * The runtime's AsyncLocalStorage (Node's, and Deno's node:async_hooks) as the core's
 * `WorkScope`: the origin of a request the gateway dispatched itself follows every piece of
 * asynchronous work it starts.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { RequestOrigin } from "../core/pipeline/context.ts";
import type { WorkScope } from "../core/plugins/types.ts";

export function asyncWorkScope(): WorkScope {
  const storage = new AsyncLocalStorage<RequestOrigin>();
  return {
    run: (origin, fn) => storage.run(origin, fn),
    origin: () => storage.getStore(),
  };
}
