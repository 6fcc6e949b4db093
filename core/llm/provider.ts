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
import type { BackendSettings } from "../proxy/backends.ts";

// Everything a provider needs, from this one module.
export type { OutEvent, StreamEvent } from "./events.ts";
export type { TokenUsage } from "./usage.ts";
export { usageFromCounts, usageOf } from "./usage.ts";
export { isRecord, type JsonObject, parseJson } from "./json.ts";
export type { BackendSettings } from "../proxy/backends.ts";
export { isContextWindowError, saysContextWindowExceeded } from "./context-window.ts";
export { CREDENTIAL_HEADERS, withCredentials } from "./credentials.ts";
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
   * With `observeStreamEvent` on an SSE stream: whether complete events, as their raw text,
   * may change `streamProgress`; the others are not parsed (core/llm/sse-scan.ts). A false
   * "yes" only costs a parse; a false "no" loses the end or the usage.
   */
  observedEventsMayMatter?(text: string): boolean;
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
  translateError?(status: number, body: unknown, headers?: Headers): JsonObject;
}

/**
 * Thrown by `translateResponse` (or a stream's first event) when a 2xx answer is an error for
 * the client, e.g. a prompt the backend's safety filter refused: the client gets `status` and
 * `body` (a chat-completions error body), in its own protocol, and the answer is not cached.
 */
export class ErrorAnswer extends Error {
  override name = "ErrorAnswer";
  constructor(readonly status: number, readonly body: JsonObject & { error: JsonObject & { message: string } }) {
    super(body.error.message);
  }
}

/** One backend attempt, as a provider's request hooks see it. */
export interface BackendCall {
  /** The backend's entry as configured (`url`, `model`, `api_key`, `region`, ...). One object per backend and config. */
  readonly backend: BackendSettings;
  /** The model the body was written for: the backend's `model`, else the client's, else the alias. */
  readonly model: string;
  /** The client asked for a stream. */
  readonly stream: boolean;
  /** The path the request goes to by default (`backendPath` of the client's path), with the client's query. */
  readonly path: string;
}

/** A request about to leave, as `authorize` sees it. */
export interface OutgoingRequest {
  readonly url: string;
  /** Lower-case names: the gateway's, the forwarded client's and the configured ones. */
  readonly headers: Readonly<Record<string, string>>;
  /** The exact bytes that will be sent. */
  readonly body: Uint8Array;
}

/** Parses a backend stream from its bytes, for a protocol that does not frame its events as text (Bedrock's binary event stream). */
export interface StreamParser {
  /** The events the bytes completed. May throw (a corrupt frame): the client's stream ends with an error event. */
  push(bytes: Uint8Array): StreamEvent[];
  /** The stream ended: the events still held. Throws when it ended inside an event. */
  end(): StreamEvent[];
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
   * Where one attempt goes, for a protocol that puts the model or the streaming choice in the
   * URL, or builds the address from the backend's settings (a region, a deployment). Default:
   * the backend's `url` (else `defaultUrl`) followed by `call.path`. A throw fails the attempt
   * (the next backend is tried; the message is in the 502 when none answers).
   */
  requestUrl?(call: BackendCall): string;
  /**
   * The headers one attempt is sent with, given the request once its URL, body and the
   * gateway's headers are final: typically `request.headers` plus the backend's credentials
   * (an API key header, a token, a signature over the body). Called for every attempt, retries
   * included, and its result is sent as is. May be async (a token or credentials fetched on
   * first use); a throw fails the attempt like a network error.
   */
  authorize?(request: OutgoingRequest, call: BackendCall): Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>;
  /** Parses the backend's streams from bytes, instead of `streamFormat`'s text framing. */
  createStreamParser?(): StreamParser;
  /**
   * Whether an error answer (status, body parsed when JSON) says the prompt does not fit the
   * model's context window, which moves the request to `context_window_fallbacks`. Default:
   * `isContextWindowError` (OpenAI's `context_length_exceeded` and the common wordings).
   */
  isContextWindowError?(status: number, body: unknown): boolean;
  /** The wait an error answer gives in its body (whole seconds), for a backend that sends no `Retry-After` header. */
  retryAfter?(status: number, body: unknown): string | undefined;
  /**
   * The base address of a backend configured without `url` when it is not `defaultUrl` (a
   * region's, a resource's): what the logs, `/-/backends` and the backend's health state name it by.
   */
  backendAddress?(backend: BackendSettings): string;
  /** What is wrong with a backend's settings for this provider (each problem "field: what to set"), checked at start and on reload. */
  backendProblems?(backend: BackendSettings): string[];
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
