/**
 * The LLM proxy's hooks: how a plugin looks at (and may change or refuse) what a model reads and
 * writes, without the proxy knowing the plugin. Every client protocol is turned into chat
 * completions inside the gateway (client-protocol.ts), so a hook sees one form whatever the
 * client spoke: the chat-completions request before the cache lookup, the chat-completions
 * answer before it is translated back, returned and cached, and the chat-completions stream
 * events before they are translated back. The `llmHooks` service (provided by the `llm-proxy`
 * plugin) takes them; the guardrails plugin is one (docs/guardrails.md).
 *
 * A hook refuses by throwing a `GatewayError` (its status and body become the answer, in the
 * client's error shape); inside a stream, whose 200 is already sent, by throwing a
 * `StreamRefused` (the stream ends with the client protocol's error event carrying its type and
 * code, never with a clean end).
 */
import type { RequestContext } from "../pipeline/context.ts";
import type { SpanAttributes } from "../telemetry/tracing.ts";
import type { JsonObject } from "./json.ts";

/** What a hook knows of the request when it is opened (after access and limits). */
export interface LlmHookRequest {
  readonly ctx: RequestContext;
  /** The model alias the client asked for (`services[].model`). */
  readonly model: string;
  /** The client asked for `"stream": true`. */
  readonly stream: boolean;
}

/**
 * A stream's chat-completions events on their way to the client: each event's data (a parsed
 * chunk, or the string `[DONE]`) goes in, what to send instead comes out (zero or more; held
 * back text comes out later).
 */
export interface ChatStreamFilter {
  /** One event's data; throws `StreamRefused` to end the stream with an error event. */
  event(data: unknown): unknown[];
  /**
   * The same on the event's raw JSON text, when the client gets chat-completions events as the
   * backend wrote them: the text to send instead (the same string when nothing changed), or
   * undefined when the filter needs the event parsed (`event` then gets it). Lets a filter that
   * reads one field skip parsing and writing every event again (docs/guardrails.md#cost).
   */
  eventText?(data: string): string | undefined;
  /** The backend stream ended: what is still held back. */
  end(): unknown[];
  /**
   * Work the filter waits for before the next event is read (an asynchronous check of what it
   * holds back), or undefined; `ending` when the backend stream has ended. A rejection with
   * `StreamRefused` ends the stream with its error event.
   */
  settle?(ending: boolean): Promise<void> | undefined;
}

/** One request's hooks (every member optional: a hook takes part only where it has work). */
export interface LlmRequestHook {
  /**
   * The chat-completions request before the cache lookup: a new body (the cache keys on it and
   * the backend gets it), or undefined to leave it as it is. Throws a `GatewayError` to refuse.
   */
  input?(body: JsonObject): Promise<JsonObject | undefined>;
  /**
   * A whole 2xx chat-completions answer before it is returned and cached: a new body, or
   * undefined to leave it. Throws a `GatewayError` to refuse (the answer's tokens are still counted).
   */
  answer?(body: JsonObject): Promise<JsonObject | undefined>;
  /** A filter for a streamed answer's chat-completions events. */
  stream?(): ChatStreamFilter;
  /** Attributes for the request's server span, computed when it ends. */
  spanAttributes?(): SpanAttributes;
}

/** A plugin's hook: opened once per LLM request; undefined when it has nothing to do for it. */
export interface LlmHook {
  open(request: LlmHookRequest): LlmRequestHook | undefined;
  /**
   * Whether a request for `model` may get an `input` from this hook, judged from the model
   * alone as soon as it is resolved. False lets the response cache's read of such requests start
   * at once, beside access and limits, as without hooks; absent, every model may (their read
   * waits for the input hooks, since a changed request is looked up as changed).
   */
  readsInputOf?(model: string): boolean;
}

/** The `llmHooks` service: hooks run in the order they were registered. */
export interface LlmHooks {
  register(hook: LlmHook): void;
}

/** Thrown by a stream filter to end a stream with the client protocol's error event of `type` and `code`. */
export class StreamRefused extends Error {
  override name = "StreamRefused";
  constructor(
    message: string,
    readonly type: string,
    readonly code: string,
  ) {
    super(message);
  }
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `llm-proxy` plugin. */
    llmHooks: LlmHooks;
  }
}
