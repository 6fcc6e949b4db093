/**
 * The public API of a client protocol: the one module a client protocol plugin imports, as
 * provider.ts is for a provider.
 *
 * A client protocol is a format clients speak to the gateway. Inside, the gateway speaks one:
 * chat completions, the identity protocol (chat-protocol.ts), which takes every path no other
 * protocol claims. Any other protocol claims its own paths and says how a request in it becomes
 * a chat-completions request, and how the answer, the stream and the errors go back to the
 * client in its format. A provider then translates chat completions to its backend as for any
 * request; a provider whose backend speaks the client's protocol itself (`speaks`) gets the
 * request as it is instead, and the protocol reads the usage of the answer it passes back.
 *
 *   import { definePlugin } from "../core/plugins/types.ts";
 *   import type { ClientProtocol } from "../core/llm/client-protocol.ts";
 *
 *   const shouting: ClientProtocol = { name: "shouting", paths: ["/v1/shout"], toChatRequest: ..., fromChat: ... };
 *   export default definePlugin({
 *     name: "protocol-shouting",
 *     dependsOn: ["providers"],
 *     setup(api) { api.use("clientProtocols").register(shouting); },
 *   });
 *
 * The LLM proxy owns everything else (cache, backends, failover, accounting, metrics), and
 * never names a protocol: the built-in Messages one (plugins/protocol-messages) registers like this.
 */
import type { OutEvent, StreamErrorFields, StreamEvent } from "./events.ts";
import type { JsonObject } from "./json.ts";
import type { ProviderDefinition, Translator, TranslatorContext } from "./provider.ts";
import { type TokenUsage, usageOf } from "./usage.ts";

// The shape checks a protocol runs on a request's well-known fields.
export {
  BOOLEAN,
  COUNT,
  fieldProblem,
  type FieldRule,
  type FieldRules,
  INTEGER,
  NUMBER,
  OBJECT,
  OBJECTS,
  POSITIVE_INTEGER,
  shownValue,
  STRING,
  STRING_OR_OBJECT,
  STRING_OR_OBJECTS,
  STRING_OR_STRINGS,
  STRINGS,
} from "./field-rules.ts";

/** The path a translated request goes on as: the chat-completions one, whatever the client called. */
export const CHAT_COMPLETIONS_PATH = "/v1/chat/completions";

/**
 * Thrown by `toChatRequest` when the request cannot be expressed: the client gets 400 with the
 * message. (A provider's `translateRequest` may throw any error to the same end.)
 */
export class UntranslatableRequest extends Error {
  override name = "UntranslatableRequest";
}

/** What `toChatRequest` knows of the request besides its body (for its messages). */
export interface ProtocolRequest {
  /** The path the client called: one of the protocol's `paths`. */
  readonly path: string;
  /** The model the service is known by (`services[].model`). */
  readonly model: string;
  /** The service's provider (`services[].provider`). */
  readonly provider: string;
}

/** What `open` knows of a request besides its body. */
export interface ProtocolCall extends ProtocolRequest {
  /** The caller's consumer (docs/design.md#consumers-and-ownership); undefined for a caller without one. */
  readonly consumer: string | undefined;
  /** The provider's backend speaks this protocol itself: the body goes to it as it is (`native`). */
  readonly native: boolean;
  /** The client asked for `"stream": true`. */
  readonly stream: boolean;
  /** Whether the provider's backend takes requests in the protocol named `protocol` as they are (`speaks`). */
  speaks(protocol: string): boolean;
}

/** A request opened by a protocol that keeps state of its own (`ClientProtocol.open`). */
export interface OpenedRequest {
  /**
   * The protocol for this one request: its members close over what `open` found (a stored
   * conversation, the id the answer will carry), and the LLM proxy uses it in place of the
   * registered one for every later step of the request.
   */
  readonly protocol: ClientProtocol;
  /**
   * Awaited before a complete (not streamed) answer goes to the client, so what the protocol
   * writes about it (a stored answer) is there when the client asks next. Absent: nothing to wait for.
   */
  settled?(): Promise<void>;
  /**
   * For a translated request: the client path the provider's `backendPath` is asked about
   * instead of the chat-completions one (a token count that goes to the backend's own counting
   * endpoint, say). Absent: the chat-completions path.
   */
  readonly routedPath?: string;
}

/** A gateway error body, `{"error":{"message","type"}}`, as `errorBody` gets it. */
export interface GatewayErrorBody extends JsonObject {
  error: JsonObject & { message: string };
}

/** How answers in a protocol are read when the backend speaks it itself (nothing translated). */
export interface NativeAnswers {
  /**
   * One per backend attempt: follows a stream passed on as it is (`observeStreamEvent`,
   * `streamProgress`), so a stream without its protocol's end gets an error event and its
   * usage can be counted. Its other methods are not used.
   */
  watch(): Translator;
  /** The usage of a complete answer (its parsed body); undefined when it reports none (never zeros). */
  answerUsage(body: unknown): TokenUsage | undefined;
}

export interface ClientProtocol {
  /** How providers name it in `speaks` (e.g. `messages`). */
  readonly name: string;
  /** The client paths in this protocol (exact, e.g. `/v1/messages`); a path is claimed by one protocol only. */
  readonly paths: readonly string[];
  /**
   * What is wrong with the body's well-known fields (the first ill-typed one), or undefined.
   * Checked before the model is looked up: the client gets 400 with the message, and no limit,
   * cache or backend sees the request (field-rules.ts has the checks).
   */
  shapeProblem?(body: JsonObject): string | undefined;
  /**
   * For a protocol that keeps state across requests (stored answers, conversations): called
   * once per request, after the caller is known and before the cache, the translation or any
   * backend, with the client's body. It may read its stores and throw a `GatewayError` (a 404
   * for an id that is not the caller's), and answers the protocol to use for this request.
   * Absent: the registered protocol serves every request.
   */
  open?(body: JsonObject, call: ProtocolCall): Promise<OpenedRequest>;
  /**
   * The request as a chat-completions request, for a provider that does not speak this
   * protocol. Throw `UntranslatableRequest` for a request that cannot be expressed (400), or a
   * `GatewayError` for another answer (a path that has no chat-completions equivalent: 404).
   * Absent: the body already is a chat-completions body (the identity protocol).
   */
  toChatRequest?(body: JsonObject, request: ProtocolRequest): JsonObject;
  /**
   * The provider's translator (chat completions <-> its backend), wrapped so that what comes
   * back (answers, streams, errors) is in this protocol. One per backend attempt, as `chat`
   * is: stream state lives on it. Absent: answers go back in chat completions.
   */
  fromChat?(chat: Translator, context: TranslatorContext): Translator;
  /**
   * How answers are read for a provider that `speaks` this protocol: then the request goes to
   * the backend as the client sent it (model rewritten, headers applied) and the answer comes
   * back as it is. Absent: every request is translated, whatever the provider says.
   */
  readonly native?: NativeAnswers;
  /**
   * The gateway's own error answers on this protocol's paths (unknown model, limits, a bad
   * body, no backend...) in this protocol's error shape, the status and headers kept.
   * Undefined leaves a body as it is (it already is in that shape). Absent: chat completions'.
   */
  errorBody?(status: number, body: GatewayErrorBody): JsonObject | undefined;
  /**
   * The event (or events, in order) that ends a broken-off stream in this protocol, which its
   * clients raise as an error. Absent: the chat-completions one, `data: {"error":{"message","type"}}`.
   * `error` gives the type and code of a stream an output hook refused (core/llm/hooks.ts),
   * absent for a broken one.
   */
  streamErrorEvent?(message: string, error?: StreamErrorFields): OutEvent | OutEvent[];
}

/*
 * Reading the provider's translator in `fromChat`: a method it leaves out means that part
 * already is chat completions. These give each part in chat completions either way.
 */

/** A 2xx answer (parsed) as a chat-completions body with its usage (the body as it came when the provider does not translate answers). */
export function chatAnswer(chat: Translator, body: unknown): { body: unknown; usage: TokenUsage | undefined } {
  return chat.translateResponse ? chat.translateResponse(body) : { body, usage: usageOf(body) };
}

/** One backend stream event as the chat-completions events' data (a parsed chunk, or the string `[DONE]`). */
export function chatStreamData(chat: Translator, event: StreamEvent): unknown[] {
  if (chat.translateStreamEvent) return chat.translateStreamEvent(event).map((out) => out.data);
  chat.observeStreamEvent?.(event);
  return [event.json ?? event.data];
}

/** A non-2xx answer's body (parsed, or its text) as a chat-completions error body, or as it came when the provider does not translate errors. */
export function chatErrorBody(chat: Translator, status: number, body: unknown): unknown {
  return chat.translateError ? chat.translateError(status, body) : body;
}

/** The `clientProtocols` service: protocol plugins register here; the LLM proxy finds a request's protocol by its path. */
export interface ClientProtocolRegistry {
  /** Throws when the name, or one of the paths, is already registered. */
  register(protocol: ClientProtocol): void;
  get(name: string): ClientProtocol | undefined;
  /** The protocol that claims `path`; chat completions for every path none claims. */
  forPath(path: string): ClientProtocol;
  names(): string[];
}

/**
 * Whether `provider`'s backend takes requests in `protocol` as they are. Only for a protocol
 * with `native` answers: the identity protocol is never passed on "natively", it goes through
 * the provider's translator.
 */
export function speaksNatively(provider: ProviderDefinition, protocol: ClientProtocol): boolean {
  return protocol.native !== undefined && providerSpeaks(provider, protocol.name);
}

/** Whether `provider` declares that its backend takes requests in the protocol named `name` as they are. */
export function providerSpeaks(provider: ProviderDefinition, name: string): boolean {
  const { speaks } = provider;
  if (speaks === "all" || speaks?.includes(name)) return true;
  // The one protocol a provider could declare before `speaks` existed.
  return provider.speaksMessages === true && name === "messages";
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `providers` plugin. */
    clientProtocols: ClientProtocolRegistry;
  }
}
