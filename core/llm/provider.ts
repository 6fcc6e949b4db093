/**
 * The public API of an LLM provider: the one module a provider plugin imports.
 *
 * A provider is a protocol the LLM proxy can speak to a backend. Inside, the gateway speaks the
 * chat-completions format (a client protocol such as the Messages API is turned into it first,
 * unless the provider `speaks` that protocol: client-protocol.ts); a provider's translator turns
 * that into its backend's protocol and the answer back. The proxy owns everything else (backend choice,
 * failover, headers, timeouts, the cache, metrics, token accounting), so a provider is small:
 *
 *   import { definePlugin } from "../core/plugins/types.ts";
 *   import type { ProviderDefinition } from "../core/llm/provider.ts";
 *
 *   const shouting: ProviderDefinition = { name: "shouting", defaultUrl: "http://127.0.0.1:9000", createTranslator: () => ({ ... }) };
 *   export default definePlugin({
 *     name: "provider-shouting",
 *     dependsOn: ["providers"],
 *     setup(api) { api.use("providers").register(shouting); },
 *   });
 *
 * and `provider: shouting` in a service routes through it. The core never names a provider:
 * the built-in ones (plugins/provider-*) register exactly like this.
 */
import type { OutEvent, StreamEvent } from "./events.ts";
import type { JsonObject } from "./json.ts";
import type { TokenUsage } from "./usage.ts";

// Everything a provider needs, from this one module.
export type { OutEvent, StreamEvent } from "./events.ts";
export type { TokenUsage } from "./usage.ts";
export { usageFromCounts, usageOf } from "./usage.ts";
export { isRecord, type JsonObject, parseJson } from "./json.ts";
export { ChatStreamWatch } from "./chat-stream-watch.ts";
export { MessagesStreamWatch, type MessagesUsage, messagesUsage } from "./messages.ts";
export {
  chatChunk,
  chatCompletion,
  chatError,
  type ChatMessage,
  type ChatToolCall,
  type ChunkEnvelope,
  DONE,
  errorTypeFor,
  type FinishReason,
  usageChunk,
  wantsStreamUsage,
} from "./chat.ts";

/** What a translator gets to know about the request it serves. */
export interface TranslatorContext {
  /** The client asked for `"stream": true`. */
  readonly stream: boolean;
  /** The gateway clock (ms since the epoch), for `created` fields. */
  now(): number;
  /** A new unique id (UUID v4), for response ids a backend does not provide. */
  newId(): string;
}

/** See `Translator.streamProgress`. */
export interface StreamProgress {
  ended: boolean;
  /** Unknown usage stays `undefined`, never zeros. */
  usage: TokenUsage | undefined;
}

/** A backend answer in the chat-completions format, with the usage it reported. */
export interface TranslatedResponse {
  /** A chat-completions response body (`object: "chat.completion"`). */
  body: JsonObject;
  /**
   * Unknown usage stays `undefined`, never zeros: token accounting is then skipped
   * (docs/design.md#usage-requirement).
   */
  usage: TokenUsage | undefined;
}

/**
 * Created once per backend attempt, so streaming state (ids, token counts, open tool calls)
 * lives on the instance. Every method is optional; an absent one means "already in the
 * chat-completions format" and the gateway passes that part through unchanged (byte for byte
 * for response bodies and streams). A method that throws never crashes the gateway: a request
 * translation error answers 400, a response translation error 502, and a stream translation
 * error ends the stream with an error event.
 */
export interface Translator {
  /**
   * The chat-completions request body (model already rewritten for the backend, and
   * `stream_options.include_usage` already set on streams) to the backend's body.
   */
  translateRequest?(body: JsonObject): JsonObject;
  /** A 2xx backend body (parsed JSON) to a chat-completions response with its usage. */
  translateResponse?(body: unknown): TranslatedResponse;
  /**
   * One backend stream event, parsed once by the gateway, to the chat-completions stream
   * events to send (zero or more). `data` of an `OutEvent` is sent as is when a string
   * (`"[DONE]"`), else as JSON.
   */
  translateStreamEvent?(event: StreamEvent): OutEvent[];
  /** The backend stream ended as its protocol says: any events still owed to the client (a final `[DONE]`). */
  translateStreamEnd?(): OutEvent[];
  /**
   * One event of a stream passed on untranslated (no `translateStreamEvent`), shown so the
   * provider can follow its end and usage for `streamProgress`.
   */
  observeStreamEvent?(event: StreamEvent): void;
  /**
   * What the stream said so far: whether the protocol's end arrived, and the usage it
   * reported. With it, a stream that ends without its end gets an error event instead of a
   * clean end, and streamed tokens can be counted; without it the gateway cannot tell.
   */
  streamProgress?(): StreamProgress;
  /**
   * A non-2xx backend body (parsed JSON, or the raw text when it is not JSON) to a
   * chat-completions error body `{"error":{"message","type"}}`. The status is kept.
   */
  translateError?(status: number, body: unknown): JsonObject;
}

export interface ProviderDefinition {
  /** The value of `provider:` in `services[]` (e.g. `chat_completions`). */
  readonly name: string;
  /** Used when a service with this provider has neither `inference_url` nor `backends`; "" = none. */
  readonly defaultUrl: string;
  /** How the backend frames a streamed answer: server-sent events (default) or one JSON object per line. */
  readonly streamFormat?: "sse" | "ndjson";
  /** The backend path for a request the client sent to `clientPath` (default: the same path). */
  backendPath?(clientPath: string): string;
  /**
   * The client protocols (by name, e.g. `["messages"]`) the backend speaks itself; `"all"` for a
   * backend that takes every protocol as it is. A request in one of them goes to it as it is
   * (only the model rewritten, headers applied, to `backendPath` of the client's path) and its
   * answer comes back as it is: the protocol reads the usage and the gateway follows the stream,
   * and `createTranslator` is not used for it. A request in any other protocol is translated to
   * chat completions first and then goes through this provider's translator like any other.
   */
  readonly speaks?: readonly string[] | "all";
  /** @deprecated The same as `speaks: ["messages"]`; kept for plugins written before `speaks`. */
  readonly speaksMessages?: boolean;
  createTranslator(context: TranslatorContext): Translator;
}

/** The `providers` service: provider plugins register here; the LLM proxy looks providers up. */
export interface ProviderRegistry {
  /** Throws when the name is already registered. */
  register(provider: ProviderDefinition): void;
  get(name: string): ProviderDefinition | undefined;
  names(): string[];
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `providers` plugin. */
    providers: ProviderRegistry;
  }
}
