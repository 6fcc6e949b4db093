/**
 * A mark on a Response whose body stream the gateway builds itself (core/llm/stream.ts) and
 * which runs the work that must come before the end of an answer (`ctx.beforeEnd`) in its own
 * pull: before it closes, and (not awaited) when the client leaves it. The pipeline hands the
 * steps over through the mark (answer-end.ts) instead of wrapping the body in a second stream
 * that only watches for its end: per chunk, that stream cost a read, a pull and an enqueue of
 * its own, and reading `.body` of @hono/node-server's lightweight Response built the full
 * WHATWG Response.
 *
 * A symbol property on the Response, as whole-body.ts (see request-slot.ts on weak collections).
 */
const HOOK: unique symbol = Symbol("gateway.endHook");

/** Filled by the pipeline at most once; the body's producer runs `steps` (see the file comment). */
export interface EndHook {
  steps?: () => Promise<void>;
}

type Marked = Response & { [HOOK]?: EndHook };

/** Marks `response` (returned as is) as running `hook`'s steps from its own body stream. */
export function withEndHook<R extends Response>(response: R, hook: EndHook): R {
  (response as Marked)[HOOK] = hook;
  return response;
}

/** The hook of a marked response whose steps are not yet taken, else undefined. */
export function freeEndHook(response: Response): EndHook | undefined {
  const hook = (response as Marked)[HOOK];
  return hook && !hook.steps ? hook : undefined;
}

/** Carries the mark of `from` over to `to` (a copy of it with other headers, same body). */
export function keepEndHook<R extends Response>(from: Response, to: R): R {
  const hook = (from as Marked)[HOOK];
  if (hook) (to as Marked)[HOOK] = hook;
  return to;
}
