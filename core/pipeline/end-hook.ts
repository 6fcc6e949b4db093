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
  /**
   * The body ended (or was cancelled) before the pipeline filled `steps`: a stream's first read,
   * which runs as the stream is built, can end it (a refusal or a failure in the backend's first
   * chunk). The pipeline then runs the steps itself before it hands the Response over.
   */
  ended?: boolean;
}

/**
 * The body's producer at its end (or cancel): runs the steps when the pipeline handed them over,
 * else marks the hook `ended` for the pipeline to run them. Undefined when there is nothing to await.
 */
export function bodyEnded(hook: EndHook | undefined): Promise<void> | undefined {
  if (!hook) return undefined;
  if (hook.steps) return hook.steps();
  hook.ended = true;
  return undefined;
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
